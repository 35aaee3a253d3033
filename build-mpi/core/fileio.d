build-mpi/core/fileio.o: core/fileio.c core/fileio.h core/alloc.h \
 core/error.h
core/fileio.h:
core/alloc.h:
core/error.h:
