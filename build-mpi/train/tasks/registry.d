build-mpi/train/tasks/registry.o: train/tasks/registry.c \
 train/tasks/registry.h train/tasks/fields.h train/trainer.h \
 optim/optimizer.h core/ops/params.h core/ops/tensor.h train/task.h \
 core/ops/tape.h core/rng.h core/alloc.h core/error.h train/checkpoint.h
train/tasks/registry.h:
train/tasks/fields.h:
train/trainer.h:
optim/optimizer.h:
core/ops/params.h:
core/ops/tensor.h:
train/task.h:
core/ops/tape.h:
core/rng.h:
core/alloc.h:
core/error.h:
train/checkpoint.h:
