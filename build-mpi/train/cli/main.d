build-mpi/train/cli/main.o: train/cli/main.c core/error.h \
 core/kernels/isa.h core/kernels/wait_policy.h train/cli/commands.h \
 train/dist.h core/ops/params.h core/ops/tensor.h core/ops/tape.h \
 core/rng.h optim/optimizer.h train/task.h
core/error.h:
core/kernels/isa.h:
core/kernels/wait_policy.h:
train/cli/commands.h:
train/dist.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
optim/optimizer.h:
train/task.h:
