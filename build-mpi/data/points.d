build-mpi/data/points.o: data/points.c data/points.h core/rng.h \
 core/error.h core/kernels/parallel.h
data/points.h:
core/rng.h:
core/error.h:
core/kernels/parallel.h:
