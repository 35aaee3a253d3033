build-mpi/data/off.o: data/off.c data/off.h core/rng.h data/points.h \
 core/alloc.h core/error.h core/fileio.h core/kernels/parallel.h
data/off.h:
core/rng.h:
data/points.h:
core/alloc.h:
core/error.h:
core/fileio.h:
core/kernels/parallel.h:
