#!/usr/bin/env bash
# mpi_bench.sh — training throughput of the Set Transformer (qkv train points:
# ISAB encoder, PMA pooling) on 1 MPI rank against 2 ranks at the same global
# batch, after `make MPI=1` (`make bench-mpi` does both). Three layouts of the same
# run (the same micro-batches, so the same checkpoint bytes: train/step.h),
# interleaved REPEAT times; the median of each is printed:
#   1 rank  x 1 thread     the baseline
#   1 rank  x 2 threads    two worker threads take the micro-batches
#   2 ranks x 1 thread     each rank half the micro-batches, one allgather per step
# examples/s = steps/s (training only, from --json) x global batch. CPU ms/example is
# the user + system time of the whole run (all ranks, start-up and the final
# evaluation included) over the examples trained: what the layout costs in cores,
# which a machine busy with other work does not hide as it hides wall-clock scaling.
# Environment: STEPS (default 40), REPEAT (5), BATCH (32), MICRO (4, points' default
# --micro-batch; BATCH / MICRO must be even, for 2 ranks), POINTS (128), QKV (./qkv).
set -euo pipefail
cd "$(dirname "$0")/.."
QKV=${QKV:-./qkv}
STEPS=${STEPS:-40}; REPEAT=${REPEAT:-5}; BATCH=${BATCH:-32}; MICRO=${MICRO:-4}; POINTS=${POINTS:-128}
ldd "$QKV" | grep libmpi > /dev/null || { echo "mpi_bench: $QKV is not an MPI build: make MPI=1"; exit 1; }
MPIRUN=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
RUN=(train points --steps "$STEPS" --batch "$BATCH" --micro-batch "$MICRO" --points "$POINTS" --test-size 32 --eval-every 0
     --log-every 0 --quiet)
layouts=("1 1" "1 2" "2 1")   # ranks threads
declare -A rates cpus
for ((i = 0; i < REPEAT; i++)); do
    for layout in "${layouts[@]}"; do
        read -r ranks threads <<< "$layout"
        /usr/bin/time -f "%U %S" -o "$T/cpu" "${MPIRUN[@]}" -np "$ranks" "$QKV" "${RUN[@]}" --threads "$threads" \
            --json "$T/r.json" > /dev/null
        rate=$(sed -n 's/.*"steps_per_second": \([0-9.]*\).*/\1/p' "$T/r.json")
        rates[$layout]="${rates[$layout]:-} $rate"
        cpus[$layout]="${cpus[$layout]:-} $(awk '{ print $1 + $2 }' "$T/cpu")"
    done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "Set Transformer (points: ISAB, width 128, $POINTS points, batch $BATCH, micro-batch $MICRO), $STEPS steps," \
     "median of $REPEAT, $(nproc) cores"
base=""
for layout in "${layouts[@]}"; do
    read -r ranks threads <<< "$layout"
    m=$(echo "${rates[$layout]}" | median)
    c=$(echo "${cpus[$layout]}" | median)
    [ -z "$base" ] && base=$m
    awk -v r="$ranks" -v t="$threads" -v s="$m" -v b="$BATCH" -v base="$base" -v all="${rates[$layout]}" \
        -v cpu="$c" -v n="$STEPS" \
        'BEGIN { printf "  %d rank%s x %d thread%s: %7.1f examples/s  (%.2f steps/s)  ratio to 1x1: %.2f  " \
                        "CPU %.1f ms/example   steps/s of each run:%s\n",
                 r, (r > 1 ? "s" : " "), t, (t > 1 ? "s" : " "), s * b, s, s / base, 1000 * cpu / (n * b), all }'
done
