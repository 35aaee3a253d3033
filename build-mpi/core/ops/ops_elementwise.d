build-mpi/core/ops/ops_elementwise.o: core/ops/ops_elementwise.c \
 core/ops/ops.h core/ops/tape.h core/ops/params.h core/ops/tensor.h \
 core/rng.h core/error.h core/kernels/fastmath.h \
 core/kernels/multiversion.h core/kernels/kernels.h \
 core/kernels/parallel.h
core/ops/ops.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/error.h:
core/kernels/fastmath.h:
core/kernels/multiversion.h:
core/kernels/kernels.h:
core/kernels/parallel.h:
