build-mpi/train/cli/cmd_explain.o: train/cli/cmd_explain.c \
 core/ops/attention.h core/ops/tape.h core/ops/params.h core/ops/tensor.h \
 core/rng.h core/error.h core/ops/ops.h core/ops/ops_position.h \
 train/cli/args.h train/cli/commands.h
core/ops/attention.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/error.h:
core/ops/ops.h:
core/ops/ops_position.h:
train/cli/args.h:
train/cli/commands.h:
