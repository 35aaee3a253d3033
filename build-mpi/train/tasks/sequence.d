build-mpi/train/tasks/sequence.o: train/tasks/sequence.c \
 train/tasks/sequence.h data/sequence.h layers/transformer.h layers/mha.h \
 core/ops/attention.h core/ops/tape.h core/ops/params.h core/ops/tensor.h \
 core/rng.h core/ops/ops_position.h layers/linear.h layers/norm.h \
 layers/positions.h train/tasks/stack_fields.h core/error.h \
 train/tasks/fields.h train/trainer.h optim/optimizer.h train/task.h \
 core/alloc.h core/ops/ops.h train/checkpoint.h train/tasks/registry.h \
 train/interrupt.h
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
core/error.h:
train/tasks/fields.h:
train/trainer.h:
optim/optimizer.h:
train/task.h:
core/alloc.h:
core/ops/ops.h:
train/checkpoint.h:
train/tasks/registry.h:
train/interrupt.h:
