#!/bin/sh
# make_task_fixtures.sh — writes tests/ref/tasks/: for each line "NAME TASK FLAGS..."
# of runs.txt, the checkpoint of `qkv train TASK FLAGS --save` (NAME.safetensors)
# and the metrics of its final line (NAME.final). tests/test_tasks.c trains the
# same runs and compares byte for byte, and evaluates these checkpoints: fixtures
# written by one version of qkv that every later version must reproduce and load.
# Run from the repository root after `make`; rerun only when a change of the
# checkpoint format or of a task's numbers is intended.
set -eu
dir=tests/ref/tasks
while read -r name task flags; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086
    ./qkv train "$task" $flags --threads 1 --quiet --save "$dir/$name.safetensors" |
        sed -e 's/ seconds=.*//' -e 's/ steps=[0-9]*//' -e 's/ loss=[^ ]*//' > "$dir/$name.final"
done < "$dir/runs.txt"
