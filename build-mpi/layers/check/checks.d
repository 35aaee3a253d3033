build-mpi/layers/check/checks.o: layers/check/checks.c \
 layers/check/checks.h core/check/gradcheck.h core/ops/params.h \
 core/ops/tensor.h core/ops/tape.h core/rng.h
layers/check/checks.h:
core/check/gradcheck.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
