build-mpi/core/rng.o: core/rng.c core/rng.h
core/rng.h:
