build-mpi/core/ops/params.o: core/ops/params.c core/ops/params.h \
 core/ops/tensor.h core/alloc.h core/error.h
core/ops/params.h:
core/ops/tensor.h:
core/alloc.h:
core/error.h:
