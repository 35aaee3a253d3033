build-mpi/core/alloc.o: core/alloc.c core/alloc.h core/error.h
core/alloc.h:
core/error.h:
