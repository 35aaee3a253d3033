build-mpi/train/tasks/points.o: train/tasks/points.c train/tasks/points.h \
 data/points.h core/rng.h layers/set_models.h layers/sets.h \
 core/ops/params.h core/ops/tensor.h core/ops/tape.h layers/linear.h \
 layers/mha.h core/ops/attention.h core/ops/ops_position.h layers/norm.h \
 train/trainer.h optim/optimizer.h train/task.h core/alloc.h core/error.h \
 core/ops/ops.h data/off.h train/step.h train/tasks/registry.h \
 train/tasks/fields.h train/tasks/set_fields.h
train/tasks/points.h:
data/points.h:
core/rng.h:
layers/set_models.h:
layers/sets.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
layers/linear.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/norm.h:
train/trainer.h:
optim/optimizer.h:
train/task.h:
core/alloc.h:
core/error.h:
core/ops/ops.h:
data/off.h:
train/step.h:
train/tasks/registry.h:
train/tasks/fields.h:
train/tasks/set_fields.h:
