build-mpi/layers/mha.o: layers/mha.c layers/mha.h core/ops/attention.h \
 core/ops/tape.h core/ops/params.h core/ops/tensor.h core/rng.h \
 core/ops/ops_position.h layers/linear.h core/alloc.h core/error.h \
 core/ops/ops.h
layers/mha.h:
core/ops/attention.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/ops_position.h:
layers/linear.h:
core/alloc.h:
core/error.h:
core/ops/ops.h:
