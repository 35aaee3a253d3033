build-mpi/core/check/checks_elementwise.o: \
 core/check/checks_elementwise.c core/check/gradcheck.h core/ops/params.h \
 core/ops/tensor.h core/ops/tape.h core/rng.h core/ops/ops.h
core/check/gradcheck.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
core/ops/ops.h:
