build-mpi/core/check/gradcheck.o: core/check/gradcheck.c \
 core/check/gradcheck.h core/ops/params.h core/ops/tensor.h \
 core/ops/tape.h core/rng.h core/alloc.h core/error.h
core/check/gradcheck.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
core/alloc.h:
core/error.h:
