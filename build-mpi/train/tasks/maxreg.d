build-mpi/train/tasks/maxreg.o: train/tasks/maxreg.c train/tasks/maxreg.h \
 data/maxreg.h layers/set_models.h layers/sets.h core/ops/params.h \
 core/ops/tensor.h core/rng.h core/ops/tape.h layers/linear.h \
 layers/mha.h core/ops/attention.h core/ops/ops_position.h layers/norm.h \
 train/trainer.h optim/optimizer.h train/task.h core/alloc.h core/error.h \
 core/ops/ops.h core/fileio.h core/io/json.h train/dist.h \
 train/tasks/registry.h train/tasks/fields.h train/tasks/set_fields.h \
 train/interrupt.h
train/tasks/maxreg.h:
data/maxreg.h:
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
train/trainer.h:
optim/optimizer.h:
train/task.h:
core/alloc.h:
core/error.h:
core/ops/ops.h:
core/fileio.h:
core/io/json.h:
train/dist.h:
train/tasks/registry.h:
train/tasks/fields.h:
train/tasks/set_fields.h:
train/interrupt.h:
