build-mpi/train/viz/plot.o: train/viz/plot.c train/viz/plot.h \
 train/viz/canvas.h core/error.h
train/viz/plot.h:
train/viz/canvas.h:
core/error.h:
