build-mpi/train/cli/train_flags.o: train/cli/train_flags.c \
 train/cli/train_flags.h train/cli/args.h train/trainer.h \
 optim/optimizer.h core/ops/params.h core/ops/tensor.h train/task.h \
 core/ops/tape.h core/rng.h core/error.h core/kernels/parallel.h \
 train/dist.h
train/cli/train_flags.h:
train/cli/args.h:
train/trainer.h:
optim/optimizer.h:
core/ops/params.h:
core/ops/tensor.h:
train/task.h:
core/ops/tape.h:
core/rng.h:
core/error.h:
core/kernels/parallel.h:
train/dist.h:
