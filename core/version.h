/* version.h — the release, MAJOR.MINOR.PATCH, written once: the Makefile reads it
 * from the line below (the shared library is libqkv.so.MAJOR), qkv.h includes it,
 * and `./qkv --version` prints it without including all of qkv.h. A change of
 * MAJOR breaks the API or ABI. */
#ifndef QKV_VERSION_H
#define QKV_VERSION_H

#define QKV_VERSION "0.3.0"

#endif
