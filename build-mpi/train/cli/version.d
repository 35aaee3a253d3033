build-mpi/train/cli/version.o: train/cli/version.c core/kernels/isa.h \
 qkv.h core/ops/attention.h core/ops/tape.h core/ops/params.h \
 core/ops/tensor.h core/rng.h core/ops/boxes.h core/error.h \
 core/hungarian.h core/kernels/isa.h core/io/npy.h core/io/png.h \
 core/ops/ops.h core/kernels/parallel.h core/ops/params.h \
 core/ops/ops_position.h core/rng.h core/io/safetensors.h core/ops/tape.h \
 core/ops/tensor.h layers/detr.h layers/linear.h layers/norm.h \
 layers/transformer.h layers/mha.h core/ops/attention.h \
 core/ops/ops_position.h layers/positions.h layers/graph.h \
 layers/linear.h layers/mha.h layers/norm.h layers/patch.h \
 layers/perceiver.h layers/positions.h layers/sampling.h \
 layers/set_loss.h layers/set_models.h layers/sets.h layers/sets.h \
 layers/transformer.h optim/optimizer.h data/detect.h data/image.h \
 data/off.h data/points.h data/points.h data/sequence.h data/maxreg.h \
 data/spirals.h data/text.h data/tokenizer.h train/trainer.h \
 optim/optimizer.h train/task.h train/checkpoint.h train/torch_names.h \
 train/cli/commands.h
core/kernels/isa.h:
qkv.h:
core/ops/attention.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/boxes.h:
core/error.h:
core/hungarian.h:
core/kernels/isa.h:
core/io/npy.h:
core/io/png.h:
core/ops/ops.h:
core/kernels/parallel.h:
core/ops/params.h:
core/ops/ops_position.h:
core/rng.h:
core/io/safetensors.h:
core/ops/tape.h:
core/ops/tensor.h:
layers/detr.h:
layers/linear.h:
layers/norm.h:
layers/transformer.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/positions.h:
layers/graph.h:
layers/linear.h:
layers/mha.h:
layers/norm.h:
layers/patch.h:
layers/perceiver.h:
layers/positions.h:
layers/sampling.h:
layers/set_loss.h:
layers/set_models.h:
layers/sets.h:
layers/sets.h:
layers/transformer.h:
optim/optimizer.h:
data/detect.h:
data/image.h:
data/off.h:
data/points.h:
data/points.h:
data/sequence.h:
data/maxreg.h:
data/spirals.h:
data/text.h:
data/tokenizer.h:
train/trainer.h:
optim/optimizer.h:
train/task.h:
train/checkpoint.h:
train/torch_names.h:
train/cli/commands.h:
