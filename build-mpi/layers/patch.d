build-mpi/layers/patch.o: layers/patch.c layers/patch.h core/ops/params.h \
 core/ops/tensor.h core/rng.h core/ops/tape.h layers/linear.h \
 core/error.h core/ops/ops.h core/ops/ops_position.h
layers/patch.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/tape.h:
layers/linear.h:
core/error.h:
core/ops/ops.h:
core/ops/ops_position.h:
