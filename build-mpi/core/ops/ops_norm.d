build-mpi/core/ops/ops_norm.o: core/ops/ops_norm.c core/error.h \
 core/kernels/multiversion.h core/kernels/kernels.h core/ops/ops.h \
 core/ops/tape.h core/ops/params.h core/ops/tensor.h core/rng.h \
 core/kernels/parallel.h
core/error.h:
core/kernels/multiversion.h:
core/kernels/kernels.h:
core/ops/ops.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/kernels/parallel.h:
