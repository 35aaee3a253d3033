build-mpi/train/curves.o: train/curves.c train/curves.h train/task.h \
 core/ops/params.h core/ops/tensor.h core/ops/tape.h core/rng.h \
 core/error.h train/viz/plot.h train/viz/canvas.h
train/curves.h:
train/task.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
core/error.h:
train/viz/plot.h:
train/viz/canvas.h:
