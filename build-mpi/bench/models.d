build-mpi/bench/models.o: bench/models.c core/alloc.h \
 core/ops/attention.h core/ops/tape.h core/ops/params.h core/ops/tensor.h \
 core/rng.h core/error.h core/ops/ops.h optim/optimizer.h bench/bench.h \
 train/step.h train/task.h train/tasks/registry.h train/tasks/fields.h \
 train/trainer.h
core/alloc.h:
core/ops/attention.h:
core/ops/tape.h:
core/ops/params.h:
core/ops/tensor.h:
core/rng.h:
core/error.h:
core/ops/ops.h:
optim/optimizer.h:
bench/bench.h:
train/step.h:
train/task.h:
train/tasks/registry.h:
train/tasks/fields.h:
train/trainer.h:
