build-mpi/core/ops/tape.o: core/ops/tape.c core/ops/tape.h \
 core/ops/params.h core/ops/tensor.h core/rng.h core/alloc.h core/error.h
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/alloc.h:
core/error.h:
