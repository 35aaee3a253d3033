build-mpi/train/trainer.o: train/trainer.c train/trainer.h \
 optim/optimizer.h core/ops/params.h core/ops/tensor.h train/task.h \
 core/ops/tape.h core/rng.h train/checkpoint.h core/alloc.h core/error.h \
 core/fileio.h core/kernels/parallel.h train/dist.h train/interrupt.h \
 train/step.h train/trainer_outputs.h train/curves.h
train/trainer.h:
optim/optimizer.h:
core/ops/params.h:
core/ops/tensor.h:
train/task.h:
core/ops/tape.h:
core/rng.h:
train/checkpoint.h:
core/alloc.h:
core/error.h:
core/fileio.h:
core/kernels/parallel.h:
train/dist.h:
train/interrupt.h:
train/step.h:
train/trainer_outputs.h:
train/curves.h:
