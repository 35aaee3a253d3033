build-mpi/core/kernels/wait_policy.o: core/kernels/wait_policy.c \
 core/kernels/wait_policy.h core/kernels/parallel.h
core/kernels/wait_policy.h:
core/kernels/parallel.h:
