build-mpi/core/ops/ops_reduce.o: core/ops/ops_reduce.c core/error.h \
 core/ops/ops.h core/ops/tape.h core/ops/params.h core/ops/tensor.h \
 core/rng.h core/kernels/parallel.h
core/error.h:
core/ops/ops.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/kernels/parallel.h:
