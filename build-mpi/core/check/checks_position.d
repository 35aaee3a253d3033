build-mpi/core/check/checks_position.o: core/check/checks_position.c \
 core/check/gradcheck.h core/ops/params.h core/ops/tensor.h \
 core/ops/tape.h core/rng.h core/ops/ops_position.h
core/check/gradcheck.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
core/ops/ops_position.h:
