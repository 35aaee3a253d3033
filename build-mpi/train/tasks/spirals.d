build-mpi/train/tasks/spirals.o: train/tasks/spirals.c \
 train/tasks/spirals.h layers/linear.h core/ops/params.h \
 core/ops/tensor.h core/rng.h core/ops/tape.h train/trainer.h \
 optim/optimizer.h train/task.h core/alloc.h core/error.h core/ops/ops.h \
 data/spirals.h train/tasks/registry.h train/tasks/fields.h \
 train/interrupt.h
train/tasks/spirals.h:
layers/linear.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/tape.h:
train/trainer.h:
optim/optimizer.h:
train/task.h:
core/alloc.h:
core/error.h:
core/ops/ops.h:
data/spirals.h:
train/tasks/registry.h:
train/tasks/fields.h:
train/interrupt.h:
