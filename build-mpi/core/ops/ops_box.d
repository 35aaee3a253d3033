build-mpi/core/ops/ops_box.o: core/ops/ops_box.c core/ops/boxes.h \
 core/ops/tape.h core/ops/params.h core/ops/tensor.h core/rng.h \
 core/error.h core/ops/ops.h core/kernels/parallel.h
core/ops/boxes.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/error.h:
core/ops/ops.h:
core/kernels/parallel.h:
