#!/bin/sh
# compare.sh — qkv bench, PyTorch (bench/torch_bench.py) and OpenBLAS
# (build/blas_bench) in the same run, side by side: `make bench-compare` builds
# what it needs and runs this from the repository root.
#
# Usage: bench/compare.sh [all|matmul|attention|train|text|text-quality]
#        (ROUNDS=n: n rounds, default 3; text-quality: 1)
# Each round runs the programs one after the other; the table gives each
# program's median over the rounds and the median of the per-round ratios (a
# ratio is taken within one round, so both sides saw the same machine load).
# The load average is printed before and after, and with each text run.
#
# text (part of all): `qkv train text` and bench/torch_text.py, the same model,
# data and schedule, TEXT_STEPS steps (default 300) on each of TEXT_THREADS
# (default "1 2") threads, qkv then PyTorch for each thread count in each round:
# ms per step after 20 warm-up steps (qkv: the mean from its --csv times;
# PyTorch: the median of its per-step times) and the final validation loss.
# text-quality: the same at 2,000 steps (the task's default run) on 2 threads,
# one round: the validation losses to compare; it takes minutes. compare.py
# checks that both read the same corpus (bytes, vocabulary) and built models of
# the same parameter count (qkv's banner), and that PyTorch's model, given the
# weights qkv trained (its --save checkpoint), has the validation loss qkv reported
# for them: the forward passes and validation windows are the same. It fails
# (exit 1, no table) otherwise.
#
# The OpenMP wait policy is the one qkv would pick for itself (core/kernels/parallel.h),
# exported so that qkv, PyTorch and OpenBLAS all run with it: a short spin
# (GOMP_SPINCOUNT=3000) when no other task is runnable, OMP_WAIT_POLICY=passive
# when the machine is busy (spinning threads there made a 2-thread step 30x
# slower than a 1-thread one). Set either variable to choose yourself.
#
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which this environment may set for old
# OpenBLAS builds that misbehave on some CPUs, pin OpenBLAS to one kernel set and
# cache size whatever this CPU is, which is not OpenBLAS at its best here: they
# are unset for blas_bench and torch_bench.py only (a subshell per command; qkv
# and the caller's environment keep them), and the header prints the core
# OpenBLAS then picks, once for each of the two.
#
# Each program also checks one product after measuring (blas_bench: OpenBLAS
# against qkv_gemm; torch_bench.py: float32 against float64); a failed check
# exits non-zero and stops the run, so no table is printed for a wrong kernel.
set -e
# Runs "$@" with OpenBLAS free to choose its core for this CPU.
without_openblas_pins() (
    unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
    exec "$@"
)
if [ -z "${OMP_WAIT_POLICY:-}" ] && [ -z "${GOMP_SPINCOUNT:-}" ]; then
    fewest=99
    for sample in 1 2 3; do
        # "running/total" counts the reader: this shell (read is a builtin).
        read -r _ _ _ running_total _ < /proc/loadavg
        others=$(( ${running_total%/*} - 1 ))
        [ "$others" -lt "$fewest" ] && fewest=$others
        sleep 0.004
    done
    if [ "$fewest" -eq 0 ]; then export GOMP_SPINCOUNT=3000; else export OMP_WAIT_POLICY=passive; fi
fi
section=${1:-all}
case "$section" in
    all|matmul|attention|train|text) rounds=${ROUNDS:-3}; text_steps=${TEXT_STEPS:-300}
                                     text_threads=${TEXT_THREADS:-1 2} ;;
    text-quality) rounds=${ROUNDS:-1}; text_steps=${TEXT_STEPS:-2000}; text_threads=${TEXT_THREADS:-2} ;;
    *) echo "usage: bench/compare.sh [all|matmul|attention|train|text|text-quality]" >&2; exit 2 ;;
esac
case "$section" in text*) kernels=no ;; *) kernels=yes ;; esac
case "$section" in all|text*) text=yes ;; *) text=no ;; esac
out=build/bench
mkdir -p "$out" "$out/text"
rm -f "$out"/*.json "$out"/text/*
# One text run of each program on $1 threads in round $2: qkv's JSON, CSV, log and
# checkpoint, then PyTorch's JSON and log, each preceded by the load average.
text_round() {
    tag="$2.$1"
    echo "text, $1 thread(s), $text_steps steps: qkv (load $(cut -d' ' -f1-3 /proc/loadavg))"
    ./qkv train text --steps "$text_steps" --threads "$1" --eval-every 0 --log-every 20 \
        --json "$out/text/qkv.$tag.json" --csv "$out/text/qkv.$tag.csv" \
        --save "$out/text/qkv.$tag.safetensors" > "$out/text/qkv.$tag.log"
    tail -n 1 "$out/text/qkv.$tag.log"
    echo "text, $1 thread(s), $text_steps steps: PyTorch (load $(cut -d' ' -f1-3 /proc/loadavg))"
    without_openblas_pins /usr/bin/python3 bench/torch_text.py --steps "$text_steps" --threads "$1" \
        --json "$out/text/torch.$tag.json" --qkv-checkpoint "$out/text/qkv.$tag.safetensors" \
        > "$out/text/torch.$tag.log"
    tail -n 2 "$out/text/torch.$tag.log"
}
echo "load before: $(uptime)"
echo "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-(unset)} GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-(unset)}"
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-(unset)}" \
     "in the environment: unset for OpenBLAS and PyTorch, kept for qkv"
if [ "$kernels" = yes ]; then without_openblas_pins build/blas_bench --core; fi
without_openblas_pins /usr/bin/python3 bench/torch_bench.py --core
i=1
while [ "$i" -le "$rounds" ]; do
    echo "== round $i of $rounds"
    if [ "$kernels" = yes ]; then
        ./qkv bench "$section" --json "$out/qkv.$i.json"
        without_openblas_pins /usr/bin/python3 bench/torch_bench.py "$section" --json "$out/torch.$i.json"
        if [ "$section" = all ] || [ "$section" = matmul ]; then
            without_openblas_pins build/blas_bench --json "$out/openblas.$i.json"
        fi
    fi
    if [ "$text" = yes ]; then
        for threads in $text_threads; do text_round "$threads" "$i"; done
    fi
    i=$((i + 1))
done
echo "load after: $(uptime)"
/usr/bin/python3 bench/compare.py "$out"
