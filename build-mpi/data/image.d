build-mpi/data/image.o: data/image.c data/image.h core/ops/tensor.h \
 /usr/include/stb/stb_image.h core/alloc.h core/error.h core/fileio.h \
 core/io/png.h
data/image.h:
core/ops/tensor.h:
/usr/include/stb/stb_image.h:
core/alloc.h:
core/error.h:
core/fileio.h:
core/io/png.h:
