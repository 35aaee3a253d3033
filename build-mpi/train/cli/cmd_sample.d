build-mpi/train/cli/cmd_sample.o: train/cli/cmd_sample.c core/alloc.h \
 core/error.h core/kernels/parallel.h train/cli/args.h \
 train/cli/commands.h train/tasks/text.h data/text.h data/tokenizer.h \
 layers/linear.h core/ops/params.h core/ops/tensor.h core/rng.h \
 core/ops/tape.h layers/sampling.h layers/transformer.h layers/mha.h \
 core/ops/attention.h core/ops/ops_position.h layers/norm.h \
 layers/positions.h train/task.h train/tasks/stack_fields.h \
 train/tasks/fields.h train/trainer.h optim/optimizer.h
core/alloc.h:
core/error.h:
core/kernels/parallel.h:
train/cli/args.h:
train/cli/commands.h:
train/tasks/text.h:
data/text.h:
data/tokenizer.h:
layers/linear.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/ops/tape.h:
layers/sampling.h:
layers/transformer.h:
layers/mha.h:
core/ops/attention.h:
core/ops/ops_position.h:
layers/norm.h:
layers/positions.h:
train/task.h:
train/tasks/stack_fields.h:
train/tasks/fields.h:
train/trainer.h:
optim/optimizer.h:
