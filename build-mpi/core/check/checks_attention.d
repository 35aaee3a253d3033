build-mpi/core/check/checks_attention.o: core/check/checks_attention.c \
 core/ops/attention.h core/ops/tape.h core/ops/params.h core/ops/tensor.h \
 core/rng.h core/check/gradcheck.h
core/ops/attention.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/check/gradcheck.h:
