build-mpi/layers/detr.o: layers/detr.c layers/detr.h layers/linear.h \
 core/ops/params.h core/ops/tensor.h core/rng.h core/ops/tape.h \
 layers/norm.h layers/transformer.h layers/mha.h core/ops/attention.h \
 core/ops/ops_position.h layers/positions.h core/error.h core/ops/ops.h
layers/detr.h:
layers/linear.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/tape.h:
layers/norm.h:
layers/transformer.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/positions.h:
core/error.h:
core/ops/ops.h:
