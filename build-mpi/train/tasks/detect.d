build-mpi/train/tasks/detect.o: train/tasks/detect.c train/tasks/detect.h \
 train/tasks/detect_model.h data/detect.h layers/detr.h layers/linear.h \
 core/ops/params.h core/ops/tensor.h core/rng.h core/ops/tape.h \
 layers/norm.h layers/transformer.h layers/mha.h core/ops/attention.h \
 core/ops/ops_position.h layers/positions.h layers/patch.h \
 train/trainer.h optim/optimizer.h train/task.h core/alloc.h core/error.h \
 layers/set_loss.h train/tasks/registry.h train/tasks/fields.h \
 train/interrupt.h
train/tasks/detect.h:
train/tasks/detect_model.h:
data/detect.h:
layers/detr.h:
layers/linear.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/tape.h:
layers/norm.h:
layers/transformer.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/positions.h:
layers/patch.h:
train/trainer.h:
optim/optimizer.h:
train/task.h:
core/alloc.h:
core/error.h:
layers/set_loss.h:
train/tasks/registry.h:
train/tasks/fields.h:
train/interrupt.h:
