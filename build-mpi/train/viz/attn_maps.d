build-mpi/train/viz/attn_maps.o: train/viz/attn_maps.c \
 train/viz/attn_maps.h core/error.h train/viz/canvas.h
train/viz/attn_maps.h:
core/error.h:
train/viz/canvas.h:
