build-mpi/data/spirals.o: data/spirals.c data/spirals.h core/rng.h
data/spirals.h:
core/rng.h:
