# qkv — build, test, demo. `make` builds build/libqkv.a and ./qkv.
# System packages (Debian): check and libstb-dev, found through pkg-config.

CC      ?= gcc
OPT     ?= -O3 -march=native
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=c11 -D_DEFAULT_SOURCE -fopenmp -ffp-contract=fast -fno-trapping-math -fno-math-errno -Wall -Wextra -I.
LDLIBS  += -fopenmp -lm $(shell pkg-config --libs stb 2>/dev/null)

# make MPI=1: ./qkv for mpirun (train/dist.h). The compiler and flags are recorded
# in build/.flags; a change there rebuilds everything, so builds never mix.
ifneq ($(filter test-mpi bench-mpi,$(MAKECMDGOALS)),)
MPI     := 1
endif
ifeq ($(MPI),1)
CC      := mpicc
CFLAGS  += -DQKV_MPI
endif
$(shell mkdir -p build && echo '$(CC) $(CFLAGS)' | cmp -s - build/.flags || echo '$(CC) $(CFLAGS)' > build/.flags)

DEB_PACKAGES := check libstb-dev pkg-config
PKG_OK := $(shell pkg-config --exists check stb 2>/dev/null && echo yes)

LIB_DIRS := core layers optim data train
LIB_SRC  := $(filter-out train/main.c,$(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
LIB_OBJ  := $(LIB_SRC:%.c=build/%.o)
TEST_SRC := $(wildcard tests/*.c)
TEST_OBJ := $(TEST_SRC:%.c=build/%.o)
LIB      := build/libqkv.a

.PHONY: all test demo deps bench bench-compare gradcheck example tutorial clean check-deps test-mpi bench-mpi
all: check-deps $(LIB) qkv

check-deps:
ifneq ($(PKG_OK),yes)
	@echo "qkv: missing system packages; run: apt-get install -y $(DEB_PACKAGES)   (or: make deps)"; exit 1
endif

deps:
	DEBIAN_FRONTEND=noninteractive apt-get install -y $(DEB_PACKAGES)

STB_CFLAGS   := $(shell pkg-config --cflags stb 2>/dev/null)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null) $(STB_CFLAGS)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null)

build/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(STB_CFLAGS) -MMD -MP -c $< -o $@

build/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -MMD -MP -c $< -o $@

# A change of flags rebuilds everything.
$(LIB_OBJ) $(TEST_OBJ) build/train/main.o: Makefile build/.flags

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

qkv: build/train/main.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< -Lbuild -lqkv $(LDLIBS)

build/run_tests: $(TEST_OBJ) $(LIB)
	$(CC) $(CFLAGS) -o $@ $(TEST_OBJ) -Lbuild -lqkv $(CHECK_LIBS) $(LDLIBS)

build/example: docs/example.c $(LIB)
	$(CC) $(CFLAGS) -o $@ $< -Lbuild -lqkv $(LDLIBS)

example: build/example
	./build/example

build/tutorial: docs/tutorial.c $(LIB)
	$(CC) $(CFLAGS) -o $@ $< -Lbuild -lqkv $(LDLIBS)

tutorial: build/tutorial
	./build/tutorial

test: check-deps build/run_tests qkv build/example build/tutorial
	./build/example > /dev/null
	cd tests && CK_FORK=no ../build/run_tests

# Data parallelism under mpirun (Open MPI: apt-get install libopenmpi-dev openmpi-bin).
test-mpi:
	$(MAKE) -j2 MPI=1 all
	tests/mpi_test.sh

bench-mpi:
	$(MAKE) -j2 MPI=1 all
	bench/mpi_bench.sh

demo: all
	./qkv train reverse

gradcheck: all
	./qkv gradcheck

bench: all
	./qkv bench

# Side by side with PyTorch and OpenBLAS (bench/compare.sh). OpenBLAS is linked
# only into this measuring program, never into qkv.
build/blas_bench: bench/blas_bench.c
	@mkdir -p build
	$(CC) -O2 -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -o $@ $< -lopenblas

bench-compare: all build/blas_bench
	bench/compare.sh

clean:
	rm -rf build qkv

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) build/train/main.d
