build-mpi/core/ops/ops_position.o: core/ops/ops_position.c core/error.h \
 core/kernels/parallel.h core/ops/ops_position.h core/ops/tape.h \
 core/ops/params.h core/ops/tensor.h core/rng.h
core/error.h:
core/kernels/parallel.h:
core/ops/ops_position.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
