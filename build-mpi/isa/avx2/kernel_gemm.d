build-mpi/isa/avx2/kernel_gemm.o: core/kernels/kernel_gemm.c core/alloc.h \
 core/kernels/gemm_tiles.h core/kernels/kernels.h core/kernels/parallel.h \
 core/kernels/simd.h
core/alloc.h:
core/kernels/gemm_tiles.h:
core/kernels/kernels.h:
core/kernels/parallel.h:
core/kernels/simd.h:
