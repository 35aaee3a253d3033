build-mpi/layers/set_models.o: layers/set_models.c layers/set_models.h \
 layers/sets.h core/ops/params.h core/ops/tensor.h core/rng.h \
 core/ops/tape.h layers/linear.h layers/mha.h core/ops/attention.h \
 core/ops/ops_position.h layers/norm.h core/error.h core/ops/ops.h
layers/set_models.h:
layers/sets.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/tape.h:
layers/linear.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/norm.h:
core/error.h:
core/ops/ops.h:
