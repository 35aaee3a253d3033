#!/bin/sh
# make_task_fixtures.sh — writes tests/ref/tasks/: for each line "NAME TASK FLAGS..."
# of runs.txt, the checkpoint of `qkv train TASK FLAGS --save` (NAME.safetensors)
# and the metrics of its final line (NAME.final), run from tests/ as the suite
# runs them (paths in FLAGS are relative to tests/). tests/test_tasks.c trains the
# same runs and compares byte for byte, and evaluates these checkpoints: fixtures
# written by one version of qkv that every later version must reproduce and load.
# text.txt, the text task's corpus, is generated here: sentences of a made-up
# word list drawn by a fixed linear congruential sequence.
# Run from the repository root after `make`; rerun only when a change of the
# checkpoint format or of a task's numbers is intended.
set -eu
cd tests
dir=ref/tasks
awk 'BEGIN {
    n = split("the a quiet small old red cat dog bird fish sat ran saw ate near under over by mat log " \
              "tree pond and then so but it was is not very", w, " ");
    x = 12345;
    for (s = 0; s < 900; s++) {
        len = 4 + s % 6; line = "";
        for (i = 0; i < len; i++) { x = (x * 1103 + 12345) % 65536; line = line (i ? " " : "") w[1 + x % n]; }
        printf "%s%s.\n", toupper(substr(line, 1, 1)), substr(line, 2);
    }
}' > "$dir/text.txt"
while read -r name task flags; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086
    ../qkv train "$task" $flags --threads 1 --quiet --save "$dir/$name.safetensors" |
        sed -e 's/ seconds=.*//' -e 's/ steps=[0-9]*//' -e 's/ loss=[^ ]*//' > "$dir/$name.final"
done < "$dir/runs.txt"
