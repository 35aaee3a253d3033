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
# OMP_WAIT_POLICY defaults to passive here (for qkv and PyTorch alike): on a
# machine shared with other jobs, OpenMP threads that spin at every join burn
# the time slices the other team member needs, and a 2-thread step measured
# 30x slower than a 1-thread one (passive: about the same). Set
# OMP_WAIT_POLICY=active to measure spinning on an idle machine.
set -e
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
section=${1:-all}
rounds=${ROUNDS:-3}
out=build/bench
mkdir -p "$out"
rm -f "$out"/*.json
echo "load before: $(uptime)"
echo "OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
i=1
while [ "$i" -le "$rounds" ]; do
    echo "== round $i of $rounds"
    ./qkv bench "$section" --json "$out/qkv.$i.json"
    /usr/bin/python3 bench/torch_bench.py "$section" --json "$out/torch.$i.json"
    if [ "$section" = all ] || [ "$section" = matmul ]; then
        build/blas_bench --json "$out/openblas.$i.json"
    fi
    i=$((i + 1))
done
echo "load after: $(uptime)"
/usr/bin/python3 bench/compare.py "$out"
