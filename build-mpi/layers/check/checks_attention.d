build-mpi/layers/check/checks_attention.o: \
 layers/check/checks_attention.c core/alloc.h core/check/gradcheck.h \
 core/ops/params.h core/ops/tensor.h core/ops/tape.h core/rng.h \
 core/ops/ops.h layers/check/checks.h layers/graph.h layers/mha.h \
 core/ops/attention.h core/ops/ops_position.h layers/linear.h \
 layers/transformer.h layers/norm.h layers/positions.h
core/alloc.h:
core/check/gradcheck.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
core/ops/ops.h:
layers/check/checks.h:
layers/graph.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/linear.h:
layers/transformer.h:
layers/norm.h:
layers/positions.h:
