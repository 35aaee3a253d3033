build-mpi/train/dist.o: train/dist.c train/dist.h core/ops/params.h \
 core/ops/tensor.h core/ops/tape.h core/rng.h optim/optimizer.h \
 train/task.h core/alloc.h core/error.h \
 /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h \
 /usr/lib/x86_64-linux-gnu/openmpi/include/mpi_portable_platform.h
train/dist.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
optim/optimizer.h:
train/task.h:
core/alloc.h:
core/error.h:
/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h:
/usr/lib/x86_64-linux-gnu/openmpi/include/mpi_portable_platform.h:
