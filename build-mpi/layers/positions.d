build-mpi/layers/positions.o: layers/positions.c layers/positions.h \
 core/ops/params.h core/ops/tensor.h core/ops/ops_position.h \
 core/ops/tape.h core/rng.h core/error.h core/ops/ops.h
layers/positions.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/ops_position.h:
core/ops/tape.h:
core/rng.h:
core/error.h:
core/ops/ops.h:
