build-mpi/core/ops/ops_softmax.o: core/ops/ops_softmax.c core/error.h \
 core/kernels/fastmath.h core/ops/ops.h core/ops/tape.h core/ops/params.h \
 core/ops/tensor.h core/rng.h core/kernels/parallel.h
core/error.h:
core/kernels/fastmath.h:
core/ops/ops.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/kernels/parallel.h:
