build-mpi/core/io/json.o: core/io/json.c core/io/json.h core/alloc.h \
 core/error.h
core/io/json.h:
core/alloc.h:
core/error.h:
