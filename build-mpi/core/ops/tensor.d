build-mpi/core/ops/tensor.o: core/ops/tensor.c core/ops/tensor.h \
 core/alloc.h core/error.h core/ops/tape.h core/ops/params.h core/rng.h
core/ops/tensor.h:
core/alloc.h:
core/error.h:
core/ops/tape.h:
core/ops/params.h:
core/rng.h:
