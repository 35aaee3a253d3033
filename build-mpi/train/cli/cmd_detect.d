build-mpi/train/cli/cmd_detect.o: train/cli/cmd_detect.c core/alloc.h \
 core/error.h core/kernels/parallel.h data/image.h core/ops/tensor.h \
 train/viz/canvas.h train/checkpoint.h core/rng.h optim/optimizer.h \
 core/ops/params.h train/task.h core/ops/tape.h train/cli/args.h \
 train/cli/commands.h train/tasks/detect.h train/tasks/detect_model.h \
 data/detect.h layers/detr.h layers/linear.h layers/norm.h \
 layers/transformer.h layers/mha.h core/ops/attention.h \
 core/ops/ops_position.h layers/positions.h layers/patch.h \
 train/trainer.h train/tasks/registry.h train/tasks/fields.h
core/alloc.h:
core/error.h:
core/kernels/parallel.h:
data/image.h:
core/ops/tensor.h:
train/viz/canvas.h:
train/checkpoint.h:
core/rng.h:
optim/optimizer.h:
core/ops/params.h:
train/task.h:
core/ops/tape.h:
train/cli/args.h:
train/cli/commands.h:
train/tasks/detect.h:
train/tasks/detect_model.h:
data/detect.h:
layers/detr.h:
layers/linear.h:
layers/norm.h:
layers/transformer.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/positions.h:
layers/patch.h:
train/trainer.h:
train/tasks/registry.h:
train/tasks/fields.h:
