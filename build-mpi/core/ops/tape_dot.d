build-mpi/core/ops/tape_dot.o: core/ops/tape_dot.c core/ops/tape.h \
 core/ops/params.h core/ops/tensor.h core/rng.h core/error.h \
 core/fileio.h
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/error.h:
core/fileio.h:
