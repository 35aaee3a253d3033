build-mpi/core/io/npy.o: core/io/npy.c core/io/npy.h core/ops/tensor.h \
 core/error.h core/fileio.h
core/io/npy.h:
core/ops/tensor.h:
core/error.h:
core/fileio.h:
