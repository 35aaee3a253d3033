build-mpi/train/checkpoint.o: train/checkpoint.c train/checkpoint.h \
 core/rng.h optim/optimizer.h core/ops/params.h core/ops/tensor.h \
 train/task.h core/ops/tape.h core/alloc.h core/error.h core/fileio.h \
 core/io/safetensors.h
train/checkpoint.h:
core/rng.h:
optim/optimizer.h:
core/ops/params.h:
core/ops/tensor.h:
train/task.h:
core/ops/tape.h:
core/alloc.h:
core/error.h:
core/fileio.h:
core/io/safetensors.h:
