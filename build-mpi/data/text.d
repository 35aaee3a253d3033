build-mpi/data/text.o: data/text.c data/text.h core/alloc.h core/error.h \
 core/fileio.h
data/text.h:
core/alloc.h:
core/error.h:
core/fileio.h:
