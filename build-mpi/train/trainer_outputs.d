build-mpi/train/trainer_outputs.o: train/trainer_outputs.c \
 train/trainer_outputs.h core/fileio.h train/curves.h train/task.h \
 core/ops/params.h core/ops/tensor.h core/ops/tape.h core/rng.h \
 train/trainer.h optim/optimizer.h core/error.h core/io/json.h
train/trainer_outputs.h:
core/fileio.h:
train/curves.h:
train/task.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
train/trainer.h:
optim/optimizer.h:
core/error.h:
core/io/json.h:
