build-mpi/layers/perceiver.o: layers/perceiver.c layers/perceiver.h \
 layers/linear.h core/ops/params.h core/ops/tensor.h core/rng.h \
 core/ops/tape.h layers/norm.h layers/transformer.h layers/mha.h \
 core/ops/attention.h core/ops/ops_position.h layers/positions.h \
 core/error.h core/ops/ops.h layers/sets.h
layers/perceiver.h:
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
layers/sets.h:
