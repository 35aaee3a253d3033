build-mpi/train/interrupt.o: train/interrupt.c train/interrupt.h \
 core/cancel.h core/fileio.h
train/interrupt.h:
core/cancel.h:
core/fileio.h:
