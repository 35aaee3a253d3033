build-mpi/train/experiments/lengthgen.o: train/experiments/lengthgen.c \
 core/error.h core/fileio.h core/io/json.h core/kernels/parallel.h \
 train/experiments/experiments.h train/viz/plot.h train/viz/canvas.h \
 train/tasks/sequence.h data/sequence.h layers/transformer.h layers/mha.h \
 core/ops/attention.h core/ops/tape.h core/ops/params.h core/ops/tensor.h \
 core/rng.h core/ops/ops_position.h layers/linear.h layers/norm.h \
 layers/positions.h train/tasks/stack_fields.h train/tasks/fields.h \
 train/trainer.h optim/optimizer.h train/task.h
core/error.h:
core/fileio.h:
core/io/json.h:
core/kernels/parallel.h:
train/experiments/experiments.h:
train/viz/plot.h:
train/viz/canvas.h:
train/tasks/sequence.h:
data/sequence.h:
layers/transformer.h:
layers/mha.h:
core/ops/attention.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/ops_position.h:
layers/linear.h:
layers/norm.h:
layers/positions.h:
train/tasks/stack_fields.h:
train/tasks/fields.h:
train/trainer.h:
optim/optimizer.h:
train/task.h:
