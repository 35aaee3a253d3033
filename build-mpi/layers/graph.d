build-mpi/layers/graph.o: layers/graph.c layers/graph.h layers/mha.h \
 core/ops/attention.h core/ops/tape.h core/ops/params.h core/ops/tensor.h \
 core/rng.h core/ops/ops_position.h layers/linear.h core/error.h
layers/graph.h:
layers/mha.h:
core/ops/attention.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/ops_position.h:
layers/linear.h:
core/error.h:
