build-mpi/layers/norm.o: layers/norm.c layers/norm.h core/ops/params.h \
 core/ops/tensor.h core/ops/tape.h core/rng.h core/ops/ops.h
layers/norm.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
core/ops/ops.h:
