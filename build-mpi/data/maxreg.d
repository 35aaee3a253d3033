build-mpi/data/maxreg.o: data/maxreg.c data/maxreg.h core/error.h \
 core/rng.h
data/maxreg.h:
core/error.h:
core/rng.h:
