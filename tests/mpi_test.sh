#!/usr/bin/env bash
# mpi_test.sh — data-parallel training under mpirun (train/dist.h, train/step.h);
# run by `make test-mpi` after `make MPI=1`. Ranks own nodes of the step's fixed
# sum tree over micro-batches, so every layout must write the same bytes. Checks:
#   1. for reverse (dropout 0.1, lengths 4 to 12), spirals and text (the fixture
#      corpus tests/ref/tasks/text.txt), each with 8 micro-batches: the checkpoints
#      of 1 process x 1 thread, 1 process x 2 threads, 2 ranks x 1 thread, 2 ranks
#      x 2 threads and 4 ranks x 1 thread are byte-identical (cmp);
#   2. --resume under MPI: 25 + 25 steps equal 50 bitwise (constant schedule,
#      dropout on), and equal the single-process 50-step checkpoint;
#   3. rank 0 alone prints: one `final:` line from 2 ranks and from 4;
#   4. a micro-batch count that does not split over the ranks (3 over 2) fails
#      with exit status 2 and the one-line --micro-batch error, and writes no
#      checkpoint;
#   5. a rank that dies mid-run (test hook QKV_TEST_RANK_EXIT in
#      qkv_dist_allgather) ends the job with a non-zero status and a clear message
#      instead of hanging (the `timeout` is a hang detector, not a speed limit);
#   6. `qkv experiment lengthgen` spreads its models over 2 and 3 ranks (3 does
#      not divide the 6 models' rounds evenly) and rank 0 writes the CSV and JSON of
#      one process, byte for byte apart from the measured training times; a run
#      interrupted after its first round (test hook QKV_TEST_LENGTHGEN_INTERRUPT)
#      and resumed on 2 ranks writes them too;
#   7. `qkv train maxreg --compare` spreads its 4 models x 3 seeds over 2 and 3
#      ranks (and 2 jobs per rank) and writes the record of one process, apart
#      from the measured seconds.
# The MPI build's ./qkv started without mpirun is a plain single process.
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

# 8 micro-batches each: 4 per rank on 2 ranks (so 2 threads split them), 2 on 4.
REVERSE_FLAGS=(--dropout 0.1 --min-len 4 --max-len 12 --layers 1 --dim 32 --ff 64 --batch 32
               --micro-batch 4 --test-size 50 --schedule constant --quiet)   # a flag is given once: --steps apart
REVERSE=(reverse --steps 50 "${REVERSE_FLAGS[@]}")
SPIRALS=(spirals --steps 50 --batch 64 --micro-batch 8 --quiet)
TEXT=(text --data tests/ref/tasks/text.txt --steps 30 --context 16 --layers 1 --dim 32 --heads 2 --ff 64
      --batch 8 --micro-batch 1 --val-windows 16 --quiet)

# 1. One checkpoint for every layout. Layouts: ranks (0: no mpirun) and threads.
LAYOUTS=("0 1" "0 2" "2 1" "2 2" "4 1")
run_layout() {   # ranks threads out.st stdout args...
    local ranks=$1 threads=$2 save=$3 out=$4
    shift 4
    if [ "$ranks" = 0 ]; then
        "$QKV" train "$@" --threads "$threads" --save "$save" > "$out"
    else
        "${MPIRUN[@]}" -np "$ranks" "$QKV" train "$@" --threads "$threads" --save "$save" > "$out"
    fi
}
name() { [ "$1" = 0 ] && echo "1 process x $2 thread(s)" || echo "$1 ranks x $2 thread(s)"; }
for task in REVERSE SPIRALS TEXT; do
    declare -n args=$task
    same=0
    for layout in "${LAYOUTS[@]}"; do
        read -r ranks threads <<< "$layout"
        st="$T/$task.$ranks.$threads.st"
        run_layout "$ranks" "$threads" "$st" "$T/$task.$ranks.$threads.out" "${args[@]}" ||
            { fail "${task,,}: $(name "$ranks" "$threads") run"; continue; }
        [ "$layout" = "0 1" ] && continue
        if cmp -s "$T/$task.0.1.st" "$st"; then
            same=$((same + 1))
        else
            fail "${task,,}: $(name "$ranks" "$threads") writes a checkpoint that differs from 1 process x 1 thread"
        fi
    done
    [ $same = $((${#LAYOUTS[@]} - 1)) ] &&
        pass "${task,,}: identical checkpoints from 1 process x 1|2 threads, 2 ranks x 1|2 threads, 4 ranks x 1 thread"
done

# 2. --resume under MPI: 25 + 25 steps equal 50 (constant schedule, dropout on).
"${MPIRUN[@]}" -np 2 "$QKV" train reverse "${REVERSE_FLAGS[@]}" --threads 1 --steps 25 --save "$T/half.st" > /dev/null ||
    fail "resume: first half"
"${MPIRUN[@]}" -np 2 "$QKV" train "${REVERSE[@]}" --threads 1 --resume "$T/half.st" --save "$T/resumed.st" > /dev/null ||
    fail "resume: second half"
if cmp -s "$T/REVERSE.2.1.st" "$T/resumed.st" && cmp -s "$T/REVERSE.0.1.st" "$T/resumed.st"; then
    pass "resume: 25 + 25 steps on 2 ranks equal 50 on 2 ranks and 50 in 1 process, bitwise"
else
    fail "resume: 25 + 25 steps on 2 ranks differ from 50 steps"
fi

# 3. Rank 0 alone prints (the runs of check 1).
for ranks in 2 4; do
    lines=$(grep -c '^final:' "$T/REVERSE.$ranks.1.out")
    [ "$lines" = 1 ] && pass "output: one final line from $ranks ranks" || fail "output: $lines final lines from $ranks ranks"
done

# 4. 3 micro-batches do not split over 2 ranks.
message="--micro-batch 2 makes 3 micro-batches, which do not split over 2 MPI ranks"
"${MPIRUN[@]}" -np 2 "$QKV" train spirals --steps 2 --batch 6 --micro-batch 2 --quiet --save "$T/bad.st" \
    > /dev/null 2> "$T/err"
rc=$?
errors=$(grep -c -- "^qkv train spirals: $message" "$T/err")
others=$(grep '^qkv' "$T/err" | grep -v -c -- "$message")
if [ $rc = 2 ] && [ "$errors" -ge 1 ] && [ "$others" = 0 ] && [ ! -e "$T/bad.st" ]; then
    pass "3 micro-batches over 2 ranks: exit 2, the --micro-batch error ($errors line(s), one per rank), no checkpoint"
else
    fail "3 micro-batches over 2 ranks: exit $rc, checkpoint $([ -e "$T/bad.st" ] && echo written || echo absent)," \
         "stderr: $(head -3 "$T/err")"
fi

# 5. A rank that dies: rank 1 exits at step 5 without MPI_Finalize.
start=$(date +%s.%N)
QKV_TEST_RANK_EXIT=5 timeout 120 "${MPIRUN[@]}" -x QKV_TEST_RANK_EXIT -np 2 "$QKV" train "${REVERSE[@]}" --threads 1 \
    > /dev/null 2> "$T/err"
rc=$?
took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "rank 1: QKV_TEST_RANK_EXIT=5: exiting at step 5" "$T/err" &&
   grep -q "mpirun detected that one or more processes exited" "$T/err"; then
    pass "a dead rank ends the job: exit $rc after ${took}s"
else
    fail "a dead rank: exit $rc after ${took}s (124: hung until timeout); stderr: $(head -5 "$T/err")"
fi

# 6. A signal on one rank stops every rank at the same step (issue 29): the test hook
# (train/interrupt.h) raises SIGINT on rank 1 alone, at its 11th poll (the first is
# the memory's measurement; it owns 4 of the 8 micro-batches a step: step 3's second). Step 3 is dropped on both
# ranks, the checkpoint is step 2's, every rank exits 130, and the one line is rank 0's.
INT_ARGS=(train spirals --steps 1000 --batch 64 --micro-batch 8 --eval-every 0 --threads 1 --quiet --save "$T/int.st")
"${MPIRUN[@]}" -np 1 "$QKV" "${INT_ARGS[@]}" : -np 1 env QKV_TEST_SIGNAL_AT_POLL=11 "$QKV" "${INT_ARGS[@]}" \
    > /dev/null 2> "$T/err"
rc=$?
lines=$(grep -c '^qkv: ' "$T/err")
if [ $rc = 130 ] && [ "$lines" = 2 ] && grep -q "^qkv: stopped by SIGINT after step 2 of 1000; " "$T/err" &&
   grep -q "^qkv: test hook: SIGINT at poll 11, 0 polls after it" "$T/err" && ! grep -q '^qkv: *$' "$T/err" &&
   [ "$("$QKV" eval "$T/int.st" --threads 1 > /dev/null; echo $?)" = 0 ]; then
    pass "a signal on rank 1: both ranks stop after step 2, exit 130, one line, a loadable checkpoint"
else
    fail "a signal on rank 1: exit $rc; stderr: $(grep '^qkv' "$T/err" | head -4)"
fi

# 7. lengthgen over ranks: the tables of one process.
LENGTHGEN=(experiment lengthgen --steps 4 --train-max 2 --test-max 4 --seeds 2 --test-size 4 --dim 8 --heads 2
           --ff 16 --layers 1 --batch 8 --pos none,rope,alibi --threads 1 --quiet)
export SOURCE_DATE_EPOCH=0
same_tables() {   # name: its csv and json equal those of 1 process (training times left out)
    cmp -s <(tail -n +3 "$T/lg.1.csv") <(tail -n +3 "$T/lg.$1.csv") &&
        cmp -s <(sed 's/"train_seconds": [^,]*//g; s/"command": "[^"]*"//' "$T/lg.1.json") \
               <(sed 's/"train_seconds": [^,]*//g; s/"command": "[^"]*"//' "$T/lg.$1.json")
}
"$QKV" "${LENGTHGEN[@]}" --csv "$T/lg.1.csv" --json "$T/lg.1.json" --plot "$T/lg.1.png" > /dev/null ||
    fail "lengthgen: 1 process"
for ranks in 2 3; do
    "${MPIRUN[@]}" -np $ranks "$QKV" "${LENGTHGEN[@]}" --csv "$T/lg.$ranks.csv" --json "$T/lg.$ranks.json" \
        --plot "$T/lg.$ranks.png" > /dev/null || fail "lengthgen: $ranks ranks"
    same_tables $ranks && pass "lengthgen: $ranks ranks write the CSV and JSON of 1 process" ||
        fail "lengthgen: $ranks ranks write other tables than 1 process"
done
RESUMED=("${LENGTHGEN[@]}" --csv "$T/lg.r.csv" --json "$T/lg.r.json" --plot "$T/lg.r.png")
QKV_TEST_LENGTHGEN_INTERRUPT=1 "${MPIRUN[@]}" -x QKV_TEST_LENGTHGEN_INTERRUPT -np 2 "$QKV" "${RESUMED[@]}" \
    > /dev/null 2> "$T/err"
rc=$?
finished=$(grep -o '"finished": [0-9]*' "$T/lg.r.json" 2>/dev/null)
"${MPIRUN[@]}" -np 2 "$QKV" "${RESUMED[@]}" --resume > /dev/null || fail "lengthgen: resume on 2 ranks"
if [ $rc = 130 ] && [ "$finished" = '"finished": 2' ] && grep -q -- "--resume" "$T/err" && same_tables r; then
    pass "lengthgen: interrupted on 2 ranks after a round (exit 130, 2 models kept), resumed: the tables of 1 process"
else
    fail "lengthgen: interrupted on 2 ranks: exit $rc, $finished, stderr: $(head -2 "$T/err")"
fi

# 8. maxreg --compare over ranks: the record of one process.
COMPARE=(train maxreg --compare --steps 3 --width 8 --heads 2 --batch 16 --test-size 16 --seeds 3 --threads 1)
no_seconds() { sed 's/, "seconds": [^}]*//g' "$1"; }
"$QKV" "${COMPARE[@]}" --json "$T/cmp.1.json" > /dev/null || fail "maxreg --compare: 1 process"
for layout in "2 1" "3 1" "2 2"; do
    set -- $layout
    "${MPIRUN[@]}" -np "$1" "$QKV" "${COMPARE[@]}" --jobs "$2" --json "$T/cmp.$1.$2.json" > /dev/null ||
        fail "maxreg --compare: $1 ranks x $2 jobs"
    cmp -s <(no_seconds "$T/cmp.1.json") <(no_seconds "$T/cmp.$1.$2.json") &&
        pass "maxreg --compare: $1 ranks x $2 jobs write the record of 1 process" ||
        fail "maxreg --compare: $1 ranks x $2 jobs write another record than 1 process"
done

[ $failures -eq 0 ] && echo "mpi_test: all passed" || echo "mpi_test: $failures failed"
exit $((failures > 0))
