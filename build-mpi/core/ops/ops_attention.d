build-mpi/core/ops/ops_attention.o: core/ops/ops_attention.c \
 core/cancel.h core/ops/attention.h core/ops/tape.h core/ops/params.h \
 core/ops/tensor.h core/rng.h core/error.h core/kernels/fastmath.h \
 core/kernels/block_product.h core/kernels/kernels.h \
 core/kernels/parallel.h
core/cancel.h:
core/ops/attention.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/error.h:
core/kernels/fastmath.h:
core/kernels/block_product.h:
core/kernels/kernels.h:
core/kernels/parallel.h:
