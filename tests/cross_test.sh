#!/bin/sh
# cross_test.sh — the ARM64 build (make test-cross builds build-aarch64/qkv)
# run under qemu-user next to this machine's ./qkv, on a smoke set. The stated
# tolerance is zero: qkv's results are the same bits on every path (its own
# exp/log/tanh, a fixed order for every sum, no fused multiply-add unless the
# code says so), and that holds across architectures too:
#   1. 10 training steps of reverse (a sequence model) and of maxreg (a set
#      model), 1 thread, on both builds: the checkpoints are the same bytes;
#   2. the reverse run on 2 threads under qemu, with qkv's default OpenMP wait
#      policy: the same checkpoint again, and it finishes (under qemu-user the
#      wait-policy probe cannot re-execute the program; qkv runs on regardless);
#   3. the attention group of the gradient check passes under qemu;
#   4. each build evaluates each build's checkpoint to the same metrics.
# Run from the repository root; prints what it compared and how long it took.
set -eu
QEMU=${QEMU:-qemu-aarch64-static}
arm=build-aarch64/qkv
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
start=$(date +%s)
checks=0 failures=0
check() { # check WHAT COMMAND...: counts; a failing COMMAND is reported
    what=$1
    shift
    checks=$((checks + 1))
    "$@" || { echo "cross_test: FAILED: $what"; failures=$((failures + 1)); }
}
loss() { sed -n 's/.*"final_train_loss": \([-0-9.e+]*\).*/\1/p' "$1"; }

reverse="train reverse --steps 10 --dim 32 --layers 1 --ff 64 --batch 16 --test-size 64 --seed 3"
maxreg="train maxreg --steps 10 --batch 32 --test-size 64 --seed 3"
for task in reverse maxreg; do
    eval "args=\$$task"
    # shellcheck disable=SC2086
    ./qkv $args --threads 1 --quiet --json "$t/x86-$task.json" --save "$t/x86-$task.safetensors" > /dev/null
    # shellcheck disable=SC2086
    $QEMU $arm $args --threads 1 --quiet --json "$t/arm-$task.json" --save "$t/arm-$task.safetensors" > /dev/null
    check "$task: the checkpoints differ" cmp -s "$t/x86-$task.safetensors" "$t/arm-$task.safetensors"
    echo "cross_test: $task: final loss x86-64 $(loss "$t/x86-$task.json"), aarch64 $(loss "$t/arm-$task.json")"
done

# shellcheck disable=SC2086
$QEMU $arm $reverse --threads 2 --quiet --save "$t/arm2.safetensors" > /dev/null
check "aarch64: 2 threads differ from 1" cmp -s "$t/arm-reverse.safetensors" "$t/arm2.safetensors"

check "aarch64 gradcheck --filter attention" sh -c "$QEMU $arm gradcheck --filter attention > $t/gradcheck.txt"
tail -1 "$t/gradcheck.txt" | sed 's/^/cross_test: aarch64 /'

for task in reverse maxreg; do
    for writer in x86 arm; do
        ./qkv eval "$t/$writer-$task.safetensors" > "$t/eval-x86.txt"
        $QEMU $arm eval "$t/$writer-$task.safetensors" > "$t/eval-arm.txt"
        check "$task: eval of the $writer checkpoint differs" cmp -s "$t/eval-x86.txt" "$t/eval-arm.txt"
    done
    echo "cross_test: $task: $(grep '^final' "$t/eval-arm.txt")"
done

echo "cross_test: $checks checks, $failures failures, $(($(date +%s) - start)) s under $QEMU"
[ "$failures" -eq 0 ]
