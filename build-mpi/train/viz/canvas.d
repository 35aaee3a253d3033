build-mpi/train/viz/canvas.o: train/viz/canvas.c train/viz/canvas.h \
 core/error.h core/io/png.h
train/viz/canvas.h:
core/error.h:
core/io/png.h:
