build-mpi/core/io/safetensors.o: core/io/safetensors.c \
 core/io/safetensors.h core/ops/tensor.h core/alloc.h core/error.h \
 core/fileio.h core/io/json.h
core/io/safetensors.h:
core/ops/tensor.h:
core/alloc.h:
core/error.h:
core/fileio.h:
core/io/json.h:
