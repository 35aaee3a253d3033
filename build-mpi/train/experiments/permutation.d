build-mpi/train/experiments/permutation.o: \
 train/experiments/permutation.c core/error.h core/fileio.h \
 core/io/json.h core/ops/ops.h core/ops/tape.h core/ops/params.h \
 core/ops/tensor.h core/rng.h core/kernels/parallel.h layers/detr.h \
 layers/linear.h layers/norm.h layers/transformer.h layers/mha.h \
 core/ops/attention.h core/ops/ops_position.h layers/positions.h \
 layers/set_models.h layers/sets.h train/experiments/experiments.h
core/error.h:
core/fileio.h:
core/io/json.h:
core/ops/ops.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/kernels/parallel.h:
layers/detr.h:
layers/linear.h:
layers/norm.h:
layers/transformer.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/positions.h:
layers/set_models.h:
layers/sets.h:
train/experiments/experiments.h:
