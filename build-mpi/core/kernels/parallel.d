build-mpi/core/kernels/parallel.o: core/kernels/parallel.c \
 core/kernels/parallel.h core/alloc.h core/error.h
core/kernels/parallel.h:
core/alloc.h:
core/error.h:
