build-mpi/train/tasks/fields.o: train/tasks/fields.c train/tasks/fields.h \
 train/trainer.h optim/optimizer.h core/ops/params.h core/ops/tensor.h \
 train/task.h core/ops/tape.h core/rng.h core/error.h
train/tasks/fields.h:
train/trainer.h:
optim/optimizer.h:
core/ops/params.h:
core/ops/tensor.h:
train/task.h:
core/ops/tape.h:
core/rng.h:
core/error.h:
