build-mpi/core/io/png.o: core/io/png.c core/io/png.h \
 /usr/include/stb/stb_image_write.h core/fileio.h
core/io/png.h:
/usr/include/stb/stb_image_write.h:
core/fileio.h:
