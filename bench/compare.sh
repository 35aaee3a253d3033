#!/bin/sh
# compare.sh — qkv bench, PyTorch (bench/torch_bench.py) and OpenBLAS
# (build/blas_bench) in the same run, side by side: `make bench-compare` builds
# what it needs and runs this from the repository root.
#
# Usage: bench/compare.sh [all|matmul|attention|train]   (ROUNDS=n: n rounds, default 3)
# Each round runs the three programs one after the other; the table gives each
# program's median over the rounds and the median of the per-round ratios (a
# ratio is taken within one round, so both sides saw the same machine load).
# The load average is printed before and after.
#
# The OpenMP wait policy is the one qkv would pick for itself (core/parallel.h),
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
rounds=${ROUNDS:-3}
out=build/bench
mkdir -p "$out"
rm -f "$out"/*.json
echo "load before: $(uptime)"
echo "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-(unset)} GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-(unset)}"
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-(unset)}" \
     "in the environment: unset for OpenBLAS and PyTorch, kept for qkv"
without_openblas_pins build/blas_bench --core
without_openblas_pins /usr/bin/python3 bench/torch_bench.py --core
i=1
while [ "$i" -le "$rounds" ]; do
    echo "== round $i of $rounds"
    ./qkv bench "$section" --json "$out/qkv.$i.json"
    without_openblas_pins /usr/bin/python3 bench/torch_bench.py "$section" --json "$out/torch.$i.json"
    if [ "$section" = all ] || [ "$section" = matmul ]; then
        without_openblas_pins build/blas_bench --json "$out/openblas.$i.json"
    fi
    i=$((i + 1))
done
echo "load after: $(uptime)"
/usr/bin/python3 bench/compare.py "$out"
