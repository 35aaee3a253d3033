build-mpi/core/hungarian.o: core/hungarian.c core/alloc.h core/error.h \
 core/hungarian.h
core/alloc.h:
core/error.h:
core/hungarian.h:
