build-mpi/layers/check/checks_linear.o: layers/check/checks_linear.c \
 core/check/gradcheck.h core/ops/params.h core/ops/tensor.h \
 core/ops/tape.h core/rng.h layers/check/checks.h layers/linear.h
core/check/gradcheck.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
layers/check/checks.h:
layers/linear.h:
