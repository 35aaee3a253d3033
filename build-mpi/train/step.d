build-mpi/train/step.o: train/step.c train/step.h core/ops/tape.h \
 core/ops/params.h core/ops/tensor.h core/rng.h train/task.h core/alloc.h \
 core/error.h core/kernels/parallel.h train/dist.h optim/optimizer.h \
 train/interrupt.h
train/step.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
train/task.h:
core/alloc.h:
core/error.h:
core/kernels/parallel.h:
train/dist.h:
optim/optimizer.h:
train/interrupt.h:
