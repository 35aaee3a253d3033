build-mpi/layers/check/checks_queries.o: layers/check/checks_queries.c \
 layers/check/checks.h core/check/gradcheck.h core/ops/params.h \
 core/ops/tensor.h core/ops/tape.h core/rng.h core/alloc.h core/ops/ops.h \
 layers/detr.h layers/linear.h layers/norm.h layers/transformer.h \
 layers/mha.h core/ops/attention.h core/ops/ops_position.h \
 layers/positions.h layers/patch.h layers/perceiver.h
layers/check/checks.h:
core/check/gradcheck.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
core/alloc.h:
core/ops/ops.h:
layers/detr.h:
layers/linear.h:
layers/norm.h:
layers/transformer.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/positions.h:
layers/patch.h:
layers/perceiver.h:
