#!/bin/sh
# node_test.sh — the WebAssembly build (build/web/qkv.js under Node, make web)
# next to this machine's ./qkv. The tolerance is zero: the WebAssembly kernels
# compute every multiply-add exactly (core/kernels/exact_fma.h) and the math
# functions are qkv's own, so both builds compute the same bits:
#   1. train reverse --steps 20 --eval-every 0 --threads 1: the same checkpoint bytes;
#   2. explain attention: the same output;
#   3. every position scheme and every feed-forward activation (read from
#      train reverse --help, so a new one is tested too): a short run of each,
#      the same checkpoint bytes; the points and spirals tasks (whose data are
#      drawn with sin and cos) likewise;
#   4. the WebAssembly build's portable path (QKV_ISA=portable) gives the
#      wasm path's bytes;
#   5. gradcheck passes under Node;
#   6. a bad flag is exit 2 under Node too.
# Run from the repository root (make test-node); prints what it compared and
# how long it took.
set -eu
NODE=${NODE:-node}
web="$NODE build/web/qkv.js"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
start=$(date +%s)
checks=0 failures=0
check() { # check WHAT COMMAND...: counts; a failing COMMAND is reported
    what=$1
    shift
    checks=$((checks + 1))
    "$@" || { echo "node_test: FAILED: $what"; failures=$((failures + 1)); }
}
# same NAME ARGS...: ./qkv and Node run ARGS --save; the checkpoints must match.
same() {
    name=$1
    shift
    if ./qkv "$@" --threads 1 --quiet --save "$t/native-$name.safetensors" > "$t/native.txt" 2>&1 &&
        $web "$@" --threads 1 --quiet --save "$t/node-$name.safetensors" > "$t/node.txt" 2>&1; then
        check "$name: the checkpoints differ" cmp -s "$t/native-$name.safetensors" "$t/node-$name.safetensors"
    else
        check "$name: a run failed: $(tail -1 "$t/native.txt") $(tail -1 "$t/node.txt" 2> /dev/null)" false
    fi
}

same reverse20 train reverse --steps 20 --eval-every 0

./qkv explain attention > "$t/explain-native.txt"
$web explain attention > "$t/explain-node.txt"
check "explain attention: the outputs differ" cmp -s "$t/explain-native.txt" "$t/explain-node.txt"

# The choices of a flag as --help lists them: "(a|b|c)".
choices() { ./qkv train reverse --help | sed -n "s/^ *--$1 .*(\([a-z0-9|-]*\)).*/\1/p" | tr '|' ' '; }
tiny="train reverse --steps 3 --eval-every 0 --dim 16 --layers 1 --ff 32 --batch 8 --test-size 16 --seed 5"
schemes=$(choices pos)
activations=$(choices activation)
[ -n "$schemes" ] && [ -n "$activations" ] || { echo "node_test: cannot read --pos and --activation from --help"; exit 1; }
for pos in $schemes; do
    # shellcheck disable=SC2086
    same "pos-$pos" $tiny --pos "$pos"
done
for act in $activations; do
    # shellcheck disable=SC2086
    same "activation-$act" $tiny --activation "$act"
done
same points train points --steps 3 --eval-every 0 --batch 8 --test-size 16 --seed 5
same spirals train spirals --steps 3 --hidden 8 --points 50 --seed 5

# shellcheck disable=SC2086
QKV_ISA=portable $web $tiny --pos rope --threads 1 --quiet --save "$t/node-portable.safetensors" > /dev/null 2>&1
check "QKV_ISA=portable under Node differs from the wasm path" \
    cmp -s "$t/node-pos-rope.safetensors" "$t/node-portable.safetensors"

check "gradcheck under Node" sh -c "$web gradcheck > $t/gradcheck.txt 2>&1"
tail -1 "$t/gradcheck.txt" | sed 's/^/node_test: node /'

set +e
$web train reverse --steps x > /dev/null 2>&1
rc=$?
set -e
check "a bad flag under Node: exit $rc, not 2" test "$rc" -eq 2

echo "node_test: $checks checks ($schemes; $activations), $failures failures, $(($(date +%s) - start)) s"
[ "$failures" -eq 0 ]
