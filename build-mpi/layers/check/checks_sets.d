build-mpi/layers/check/checks_sets.o: layers/check/checks_sets.c \
 layers/check/checks.h core/check/gradcheck.h core/ops/params.h \
 core/ops/tensor.h core/ops/tape.h core/rng.h core/alloc.h core/ops/ops.h \
 layers/set_models.h layers/sets.h layers/linear.h layers/mha.h \
 core/ops/attention.h core/ops/ops_position.h layers/norm.h
layers/check/checks.h:
core/check/gradcheck.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
core/alloc.h:
core/ops/ops.h:
layers/set_models.h:
layers/sets.h:
layers/linear.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/norm.h:
