build-mpi/isa/portable/kernel_table.o: core/kernels/kernel_table.c \
 core/kernels/gemm_tiles.h core/kernels/kernels.h core/kernels/simd.h
core/kernels/gemm_tiles.h:
core/kernels/kernels.h:
core/kernels/simd.h:
