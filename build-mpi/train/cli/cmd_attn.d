build-mpi/train/cli/cmd_attn.o: train/cli/cmd_attn.c core/error.h \
 core/ops/ops.h core/ops/tape.h core/ops/params.h core/ops/tensor.h \
 core/rng.h core/kernels/parallel.h train/cli/args.h \
 train/viz/attn_maps.h train/cli/commands.h train/tasks/sequence.h \
 data/sequence.h layers/transformer.h layers/mha.h core/ops/attention.h \
 core/ops/ops_position.h layers/linear.h layers/norm.h layers/positions.h \
 train/tasks/stack_fields.h train/tasks/fields.h train/trainer.h \
 optim/optimizer.h train/task.h
core/error.h:
core/ops/ops.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/kernels/parallel.h:
train/cli/args.h:
train/viz/attn_maps.h:
train/cli/commands.h:
train/tasks/sequence.h:
data/sequence.h:
layers/transformer.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/linear.h:
layers/norm.h:
layers/positions.h:
train/tasks/stack_fields.h:
train/tasks/fields.h:
train/trainer.h:
optim/optimizer.h:
train/task.h:
