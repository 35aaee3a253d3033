build-mpi/layers/set_loss.o: layers/set_loss.c core/alloc.h \
 core/ops/boxes.h core/ops/tape.h core/ops/params.h core/ops/tensor.h \
 core/rng.h core/error.h core/hungarian.h core/ops/ops.h \
 layers/set_loss.h
core/alloc.h:
core/ops/boxes.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/error.h:
core/hungarian.h:
core/ops/ops.h:
layers/set_loss.h:
