build-mpi/core/kernels/isa.o: core/kernels/isa.c core/kernels/isa.h \
 core/error.h core/kernels/kernels.h
core/kernels/isa.h:
core/error.h:
core/kernels/kernels.h:
