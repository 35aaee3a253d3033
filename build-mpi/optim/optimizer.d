build-mpi/optim/optimizer.o: optim/optimizer.c optim/optimizer.h \
 core/ops/params.h core/ops/tensor.h core/alloc.h core/error.h \
 core/kernels/parallel.h
optim/optimizer.h:
core/ops/params.h:
core/ops/tensor.h:
core/alloc.h:
core/error.h:
core/kernels/parallel.h:
