build-mpi/train/cli/cmd_train.o: train/cli/cmd_train.c core/alloc.h \
 core/error.h core/kernels/parallel.h train/step.h core/ops/tape.h \
 core/ops/params.h core/ops/tensor.h core/rng.h train/task.h \
 train/cli/args.h train/cli/commands.h train/cli/train_flags.h \
 train/trainer.h optim/optimizer.h train/dist.h train/interrupt.h \
 train/tasks/registry.h train/tasks/fields.h
core/alloc.h:
core/error.h:
core/kernels/parallel.h:
train/step.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
train/task.h:
train/cli/args.h:
train/cli/commands.h:
train/cli/train_flags.h:
train/trainer.h:
optim/optimizer.h:
train/dist.h:
train/interrupt.h:
train/tasks/registry.h:
train/tasks/fields.h:
