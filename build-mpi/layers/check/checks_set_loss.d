build-mpi/layers/check/checks_set_loss.o: layers/check/checks_set_loss.c \
 layers/check/checks.h core/check/gradcheck.h core/ops/params.h \
 core/ops/tensor.h core/ops/tape.h core/rng.h core/ops/ops.h \
 layers/set_loss.h
layers/check/checks.h:
core/check/gradcheck.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
core/ops/ops.h:
layers/set_loss.h:
