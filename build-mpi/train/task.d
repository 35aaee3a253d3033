build-mpi/train/task.o: train/task.c train/task.h core/ops/params.h \
 core/ops/tensor.h core/ops/tape.h core/rng.h core/error.h
train/task.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
core/error.h:
