#!/usr/bin/env bash
# mpi_test.sh — data-parallel training under mpirun (train/dist.h); run by
# `make test-mpi` after `make MPI=1`. Checks, with 2 ranks on this machine:
#   1. after 50 steps the final loss equals the single-process run's at the same
#      global batch to 1e-5 relative (reverse with dropout and variable lengths,
#      whose slices hold different token counts; spirals with SGD);
#   2. two MPI runs write bitwise identical checkpoints;
#   3. --resume under MPI continues bitwise as the uninterrupted MPI run;
#   4. only rank 0 prints and writes;
#   5. a batch that does not split over the ranks is a one-line --batch error;
#   6. a rank that dies mid-run (test hook QKV_TEST_RANK_EXIT) ends the job with a
#      non-zero status and a clear message instead of hanging (the `timeout` is a
#      hang detector, not a speed limit).
set -uo pipefail
cd "$(dirname "$0")/.."
QKV=${QKV:-./qkv}
command -v mpirun >/dev/null || { echo "mpi_test: mpirun missing: apt-get install -y libopenmpi-dev openmpi-bin"; exit 1; }
ldd "$QKV" | grep libmpi > /dev/null || { echo "mpi_test: $QKV is not an MPI build: make MPI=1"; exit 1; }
MPIRUN=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
export OMPI_MCA_btl_vader_single_copy_mechanism=none   # containers often forbid CMA
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
pass() { echo "mpi_test: ok   $*"; }
fail() { echo "mpi_test: FAIL $*"; failures=$((failures + 1)); }
loss_of() { sed -n 's/.*"final_train_loss": \([^,]*\),.*/\1/p' "$1"; }

REVERSE=(reverse --steps 50 --dropout 0.1 --min-len 4 --max-len 12 --dim 32 --ff 64 --batch 32 --test-size 50
         --schedule constant --quiet)
SPIRALS=(spirals --steps 50 --batch 64 --quiet)
TEXT=(text --data "$(dirname "$0")/ref/tasks/text.txt" --steps 30 --context 16 --layers 1 --dim 32 --heads 2 --ff 64
      --batch 8 --val-windows 16 --quiet)

# 1. N = 2 against one process at the same global batch.
for task in REVERSE SPIRALS TEXT; do
    declare -n args=$task
    "$QKV" train "${args[@]}" --threads 1 --json "$T/one.json" > /dev/null || fail "$task: single-process run"
    "${MPIRUN[@]}" -np 2 "$QKV" train "${args[@]}" --json "$T/two.json" --save "$T/$task.a.st" > "$T/out" ||
        fail "$task: 2-rank run"
    one=$(loss_of "$T/one.json"); two=$(loss_of "$T/two.json")
    if awk -v a="$one" -v b="$two" 'BEGIN { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a; exit !(a != "" && d <= 1e-5 * m) }'; then
        pass "$task: final loss 1 process $one, 2 ranks $two (within 1e-5 relative)"
    else
        fail "$task: final loss 1 process '$one', 2 ranks '$two' differ by more than 1e-5 relative"
    fi
    # 2. Bitwise repeatable.
    "${MPIRUN[@]}" -np 2 "$QKV" train "${args[@]}" --save "$T/$task.b.st" > /dev/null || fail "$task: second 2-rank run"
    cmp -s "$T/$task.a.st" "$T/$task.b.st" && pass "$task: two 2-rank runs write identical checkpoints" ||
        fail "$task: two 2-rank runs differ"
done

# 3. --resume: 25 + 25 steps equal 50 (constant schedule, dropout on).
"${MPIRUN[@]}" -np 2 "$QKV" train "${REVERSE[@]}" --steps 25 --save "$T/half.st" > /dev/null || fail "resume: first half"
"${MPIRUN[@]}" -np 2 "$QKV" train "${REVERSE[@]}" --resume "$T/half.st" --save "$T/resumed.st" > /dev/null ||
    fail "resume: second half"
cmp -s "$T/REVERSE.a.st" "$T/resumed.st" && pass "resume: 25 + 25 steps under MPI equal 50 bitwise" ||
    fail "resume: 25 + 25 steps differ from 50"

# 4. Rank 0 alone prints (the run of step 1 above).
lines=$(grep -c '^final:' "$T/out")
[ "$lines" = 1 ] && pass "output: one final line from 2 ranks" || fail "output: $lines final lines from 2 ranks"

# 5. A batch that does not split.
"${MPIRUN[@]}" -np 2 "$QKV" train spirals --steps 2 --batch 33 --quiet > /dev/null 2> "$T/err"
rc=$?
if [ $rc -ne 0 ] && grep -q -- "--batch 33 does not split into 2 equal slices" "$T/err"; then
    pass "batch 33 over 2 ranks: exit $rc, $(grep -c -- '--batch 33' "$T/err") error line"
else
    fail "batch 33 over 2 ranks: exit $rc, stderr: $(head -3 "$T/err")"
fi

# 6. A rank that dies: rank 1 exits at step 5 without MPI_Finalize.
start=$(date +%s.%N)
QKV_TEST_RANK_EXIT=5 timeout 120 "${MPIRUN[@]}" -x QKV_TEST_RANK_EXIT -np 2 "$QKV" train "${REVERSE[@]}" > /dev/null 2> "$T/err"
rc=$?
took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "rank 1: QKV_TEST_RANK_EXIT=5: exiting at step 5" "$T/err" &&
   grep -q "mpirun detected that one or more processes exited" "$T/err"; then
    pass "a dead rank ends the job: exit $rc after ${took}s"
else
    fail "a dead rank: exit $rc after ${took}s (124: hung until timeout); stderr: $(head -5 "$T/err")"
fi

[ $failures -eq 0 ] && echo "mpi_test: all passed" || echo "mpi_test: $failures failed"
exit $((failures > 0))
