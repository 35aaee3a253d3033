build-mpi/optim/schedule.o: optim/schedule.c optim/optimizer.h \
 core/ops/params.h core/ops/tensor.h core/error.h
optim/optimizer.h:
core/ops/params.h:
core/ops/tensor.h:
core/error.h:
