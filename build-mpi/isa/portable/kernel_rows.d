build-mpi/isa/portable/kernel_rows.o: core/kernels/kernel_rows.c \
 core/kernels/fastmath.h core/kernels/kernels.h core/kernels/simd.h
core/kernels/fastmath.h:
core/kernels/kernels.h:
core/kernels/simd.h:
