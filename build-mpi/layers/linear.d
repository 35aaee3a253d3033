build-mpi/layers/linear.o: layers/linear.c layers/linear.h \
 core/ops/params.h core/ops/tensor.h core/rng.h core/ops/tape.h \
 core/error.h core/ops/ops.h
layers/linear.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/tape.h:
core/error.h:
core/ops/ops.h:
