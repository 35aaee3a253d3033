build-mpi/train/torch_names.o: train/torch_names.c train/torch_names.h \
 core/ops/params.h core/ops/tensor.h core/alloc.h core/error.h \
 core/io/safetensors.h
train/torch_names.h:
core/ops/params.h:
core/ops/tensor.h:
core/alloc.h:
core/error.h:
core/io/safetensors.h:
