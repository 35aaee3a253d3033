build-mpi/layers/sampling.o: layers/sampling.c layers/sampling.h \
 core/rng.h core/alloc.h core/error.h
layers/sampling.h:
core/rng.h:
core/alloc.h:
core/error.h:
