build-mpi/data/detect.o: data/detect.c data/detect.h core/alloc.h \
 core/error.h core/kernels/parallel.h core/rng.h data/image.h \
 core/ops/tensor.h
data/detect.h:
core/alloc.h:
core/error.h:
core/kernels/parallel.h:
core/rng.h:
data/image.h:
core/ops/tensor.h:
