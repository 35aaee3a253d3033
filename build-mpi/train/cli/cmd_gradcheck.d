build-mpi/train/cli/cmd_gradcheck.o: train/cli/cmd_gradcheck.c \
 core/check/gradcheck.h core/ops/params.h core/ops/tensor.h \
 core/ops/tape.h core/rng.h layers/check/checks.h train/cli/args.h \
 train/cli/commands.h
core/check/gradcheck.h:
core/ops/params.h:
core/ops/tensor.h:
core/ops/tape.h:
core/rng.h:
layers/check/checks.h:
train/cli/args.h:
train/cli/commands.h:
