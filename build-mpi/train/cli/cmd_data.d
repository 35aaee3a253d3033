build-mpi/train/cli/cmd_data.o: train/cli/cmd_data.c core/error.h \
 data/detect.h train/cli/args.h train/cli/commands.h
core/error.h:
data/detect.h:
train/cli/args.h:
train/cli/commands.h:
