#!/bin/sh
# build_test.sh — how the build speaks and how many jobs it runs: one short line
# per compiled file ("  CC core/rng.c"), the full compiler line with V=1, and a
# make started without -j running one job per core (a -j given wins). Each make
# here is started as a user starts it (no MAKEFLAGS or MAKELEVEL of a parent
# make), into a build folder of its own. Run from the repository root (make test).
set -eu
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fresh() { env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make --no-print-directory "$@"; }

out=$(fresh B="$t/quiet" "$t/quiet/core/rng.o" 2>&1)
[ "$out" = "  CC core/rng.c" ] || { echo "build_test: expected '  CC core/rng.c', got: $out"; exit 1; }
out=$(fresh B="$t/loud" V=1 "$t/loud/core/rng.o" 2>&1)
case "$out" in
    *" -c core/rng.c -o $t/loud/core/rng.o"*) ;;
    *) echo "build_test: V=1 did not print the compiler line: $out"; exit 1 ;;
esac
jobs=$(fresh -pq B="$t/quiet" "$t/quiet/core/rng.o" 2>/dev/null | sed -n 's/^MAKEFLAGS = //p' | grep -o ' -j[0-9]*' | head -n 1 | cut -c4-)
[ "$jobs" = "$(nproc)" ] || { echo "build_test: make without -j runs '$jobs' jobs, not $(nproc)"; exit 1; }
jobs=$(fresh -pq -j1 B="$t/quiet" "$t/quiet/core/rng.o" 2>/dev/null | sed -n 's/^MAKEFLAGS = //p' | grep -o ' -j[0-9]*' | head -n 1 | cut -c4-)
[ "$jobs" = 1 ] || { echo "build_test: make -j1 runs '$jobs' jobs"; exit 1; }
echo "build_test: one line per file (V=1: the compiler's), $(nproc) jobs by default, -j1 obeyed"
