build-mpi/core/kernels/gemm.o: core/kernels/gemm.c core/kernels/gemm.h \
 core/kernels/block_product.h core/error.h core/kernels/kernels.h
core/kernels/gemm.h:
core/kernels/block_product.h:
core/error.h:
core/kernels/kernels.h:
