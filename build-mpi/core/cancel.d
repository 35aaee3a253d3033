build-mpi/core/cancel.o: core/cancel.c core/cancel.h
core/cancel.h:
