#!/bin/sh
# install_test.sh — make install into a temporary DESTDIR, then what a user of
# the installed qkv does: build docs/example.c with `pkg-config --cflags --libs
# qkv` and nothing else, check that it links the shared library by its soname and
# runs, and run the installed ./qkv. make uninstall then leaves no file behind.
# Then an install to a prefix of its own, as `make install PREFIX=~/opt` is: the
# note naming PKG_CONFIG_PATH, the rpath, the static link.
# Run from the repository root after `make all` (make test does).
set -eu
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
dest=$t/root
prefix=/opt/qkv-test
make -s install DESTDIR="$dest" PREFIX="$prefix" > "$t/install.log"

lib=$dest$prefix/lib
# PKG_CONFIG_SYSROOT_DIR puts the DESTDIR in front of the -I and -L paths, as for
# a staged install; PKG_CONFIG_LIBDIR makes the installed qkv.pc the only one
# besides the system's (stb's).
flags=$(PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" pkg-config --cflags --libs qkv)
${CC:-cc} -O2 -o "$t/example" docs/example.c $flags
case "$(readelf -d "$t/example")" in
    *"libqkv.so.0"*) ;;
    *) echo "install_test: example does not link libqkv.so.0"; exit 1 ;;
esac
soname=$(readelf -d "$lib/libqkv.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libqkv.so.0 ] || { echo "install_test: soname '$soname'"; exit 1; }
LD_LIBRARY_PATH="$lib" "$t/example" > "$t/example.out"
grep -q . "$t/example.out" || { echo "install_test: example printed nothing"; exit 1; }
"$dest$prefix/bin/qkv" --version | grep -q "^qkv [0-9]" || { echo "install_test: qkv --version"; exit 1; }
for f in include/qkv/qkv.h include/qkv/core/ops/tensor.h lib/libqkv.a lib/pkgconfig/qkv.pc; do
    [ -e "$dest$prefix/$f" ] || { echo "install_test: $f not installed"; exit 1; }
done

make -s uninstall DESTDIR="$dest" PREFIX="$prefix"
left=$(find "$dest" -type f -o -type l)
[ -z "$left" ] || { echo "install_test: make uninstall left: $left"; exit 1; }

# What a user does after `make install PREFIX=/some/dir` (a folder neither
# pkg-config nor the dynamic linker searches): the install names the
# PKG_CONFIG_PATH to set; with it the README's line builds the program, which
# runs with no LD_LIBRARY_PATH (qkv.pc's rpath), and --static links libqkv.a.
home=$t/home
make -s install PREFIX="$home" > "$t/install2.log"
grep -q "export PKG_CONFIG_PATH=$home/lib/pkgconfig\$" "$t/install2.log" ||
    { echo "install_test: install did not name PKG_CONFIG_PATH:"; cat "$t/install2.log"; exit 1; }
export PKG_CONFIG_PATH="$home/lib/pkgconfig"
${CC:-cc} -O2 -o "$t/example2" docs/example.c $(pkg-config --cflags --libs qkv)
env -u LD_LIBRARY_PATH "$t/example2" > "$t/example2.out" ||
    { echo "install_test: the program built with pkg-config does not run without LD_LIBRARY_PATH"; exit 1; }
cmp -s "$t/example.out" "$t/example2.out" || { echo "install_test: the two installs' programs differ"; exit 1; }
${CC:-cc} -O2 -static -o "$t/example3" docs/example.c $(pkg-config --cflags --libs --static qkv) 2>/dev/null
case "$(readelf -d "$t/example3" 2>&1)" in
    *NEEDED*) echo "install_test: --static example needs shared libraries"; exit 1 ;;
esac
"$t/example3" | cmp -s - "$t/example.out" || { echo "install_test: the static program's output differs"; exit 1; }
make -s uninstall PREFIX="$home"
left=$(find "$home" -type f -o -type l)
[ -z "$left" ] || { echo "install_test: make uninstall left: $left"; exit 1; }
echo "install_test: installed (staged, and to a prefix of its own), built docs/example.c with pkg-config" \
     "(shared: found by its rpath; static), ran it, uninstalled"
