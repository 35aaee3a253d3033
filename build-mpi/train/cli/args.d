build-mpi/train/cli/args.o: train/cli/args.c train/cli/args.h \
 core/error.h
train/cli/args.h:
core/error.h:
