build-mpi/data/tokenizer_text.o: data/tokenizer_text.c data/tokenizer.h \
 core/error.h
data/tokenizer.h:
core/error.h:
