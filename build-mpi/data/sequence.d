build-mpi/data/sequence.o: data/sequence.c data/sequence.h core/alloc.h \
 core/error.h core/ops/params.h core/ops/tensor.h core/rng.h
data/sequence.h:
core/alloc.h:
core/error.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
