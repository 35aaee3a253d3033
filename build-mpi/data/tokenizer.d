build-mpi/data/tokenizer.o: data/tokenizer.c data/tokenizer.h \
 core/alloc.h core/error.h
data/tokenizer.h:
core/alloc.h:
core/error.h:
