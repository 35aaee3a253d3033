build-mpi/train/experiments/common.o: train/experiments/common.c \
 core/error.h train/experiments/experiments.h train/trainer.h \
 optim/optimizer.h core/ops/params.h core/ops/tensor.h train/task.h \
 core/ops/tape.h core/rng.h
core/error.h:
train/experiments/experiments.h:
train/trainer.h:
optim/optimizer.h:
core/ops/params.h:
core/ops/tensor.h:
train/task.h:
core/ops/tape.h:
core/rng.h:
