build-mpi/core/check/checks_box.o: core/check/checks_box.c \
 core/ops/boxes.h core/ops/tape.h core/ops/params.h core/ops/tensor.h \
 core/rng.h core/check/gradcheck.h core/ops/ops.h
core/ops/boxes.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/check/gradcheck.h:
core/ops/ops.h:
