build-mpi/train/cli/cmd_experiment.o: train/cli/cmd_experiment.c \
 core/error.h core/kernels/parallel.h data/sequence.h train/cli/args.h \
 train/cli/commands.h train/experiments/experiments.h
core/error.h:
core/kernels/parallel.h:
data/sequence.h:
train/cli/args.h:
train/cli/commands.h:
train/experiments/experiments.h:
