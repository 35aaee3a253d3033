build-mpi/layers/transformer.o: layers/transformer.c layers/transformer.h \
 layers/mha.h core/ops/attention.h core/ops/tape.h core/ops/params.h \
 core/ops/tensor.h core/rng.h core/ops/ops_position.h layers/linear.h \
 layers/norm.h layers/positions.h core/alloc.h core/error.h \
 core/ops/ops.h
layers/transformer.h:
layers/mha.h:
core/ops/attention.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/ops_position.h:
layers/linear.h:
layers/norm.h:
layers/positions.h:
core/alloc.h:
core/error.h:
core/ops/ops.h:
