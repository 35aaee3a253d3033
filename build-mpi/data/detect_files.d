build-mpi/data/detect_files.o: data/detect_files.c data/detect.h \
 core/alloc.h core/error.h core/fileio.h core/ops/tensor.h data/image.h
data/detect.h:
core/alloc.h:
core/error.h:
core/fileio.h:
core/ops/tensor.h:
data/image.h:
