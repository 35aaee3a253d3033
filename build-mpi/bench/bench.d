build-mpi/bench/bench.o: bench/bench.c bench/bench.h core/alloc.h \
 core/error.h core/fileio.h core/kernels/gemm.h core/kernels/isa.h \
 core/kernels/kernels.h core/kernels/parallel.h core/rng.h \
 train/cli/args.h train/cli/commands.h train/trainer.h optim/optimizer.h \
 core/ops/params.h core/ops/tensor.h train/task.h core/ops/tape.h
bench/bench.h:
core/alloc.h:
core/error.h:
core/fileio.h:
core/kernels/gemm.h:
core/kernels/isa.h:
core/kernels/kernels.h:
core/kernels/parallel.h:
core/rng.h:
train/cli/args.h:
train/cli/commands.h:
train/trainer.h:
optim/optimizer.h:
core/ops/params.h:
core/ops/tensor.h:
train/task.h:
core/ops/tape.h:
