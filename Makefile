# qkv — build, test, demo, install. `make` builds build/libqkv.a, build/libqkv.so
# and ./qkv. The system packages a step needs (Debian names below) are installed
# by the step itself when missing (mk/deps.sh: apt-get as root or through a sudo
# that needs no password, otherwise a one-line message).

CC      ?= gcc
# Parallel by default: a make started without -j runs as many jobs as the
# machine has cores (a -j on the command line wins, and a sub-make shares its
# parent's jobs; `make clean ...` in one command stays serial, so nothing is
# built while it deletes). V=1 prints the full compiler lines; otherwise one
# short line per file ("  CC core/rng.c").
ifeq ($(MAKELEVEL)$(filter clean,$(MAKECMDGOALS)),0)
ifeq ($(filter -j% j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif
endif
ifeq ($(V),1)
quiet =
else
quiet = @printf '  %s %s\n' $(1) '$(2)';
endif
# No -march: one build runs on every CPU of its architecture. The hot kernels are
# compiled once more per instruction set (ISAS below) and chosen at run time.
# make NATIVE=1 adds -march=native (this CPU only; the results stay the same bits).
# -ffp-contract=off: no multiply-add is fused unless the code says so, so a
# result is the same float operations on every path (core/kernels/simd.h).
# -fPIC: the same objects make libqkv.a and libqkv.so; -fno-semantic-interposition
# lets the compiler still inline and call directly within the library.
OPT     ?= -O3
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=c11 -D_DEFAULT_SOURCE -fopenmp -ffp-contract=off -fno-trapping-math -fno-math-errno \
           -fPIC -fno-semantic-interposition -Wall -Wextra -I.
ifeq ($(NATIVE),1)
CFLAGS  += -march=native
endif
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
# Read when a recipe runs, not when make starts: the packages may be installed
# by this very run (mk/deps.sh).
STB_CFLAGS    = $(shell pkg-config --cflags stb 2>/dev/null)
STB_LIBS      = $(shell pkg-config --libs stb 2>/dev/null)
CHECK_CFLAGS  = $(shell pkg-config --cflags check 2>/dev/null) $(STB_CFLAGS)
CHECK_LIBS    = $(shell pkg-config --libs check 2>/dev/null)
LDLIBS       += -fopenmp -lm $(STB_LIBS)

# What each step needs (Debian packages; build-essential's gcc and make are taken
# as given): the library, ./qkv and the demo need stb (PNG files) and pkg-config;
# the tests need check and, for the text task's default corpus, fortunes.
DEPS_BUILD := pkg-config libstb-dev
DEPS_TEST  := $(DEPS_BUILD) check fortunes
# Only the side-by-side measurements (never qkv itself): PyTorch for test-torch and
# bench-compare, OpenBLAS for bench-compare's blas_bench.
DEPS_TORCH := python3-torch python3-numpy
DEPS_BENCH := $(DEPS_TORCH) libopenblas-dev

# The version is written once, in core/version.h (which qkv.h includes); the shared
# library's soname carries the major number (libqkv.so.$(VERSION_MAJOR)).
HASH          := \#
VERSION       := $(shell sed -n 's/^$(HASH)define QKV_VERSION "\(.*\)"/\1/p' core/version.h)
VERSION_MAJOR := $(firstword $(subst ., ,$(VERSION)))

# B is the build directory and BIN the command-line binary: test-asan and
# test-valgrind build the same sources into their own directories.
B       ?= build
BIN     ?= qkv

# make MPI=1: ./qkv for mpirun (train/dist.h). The compiler and flags are recorded
# in $(B)/.flags; a change there rebuilds everything, so builds never mix.
ifneq ($(filter test-mpi bench-mpi,$(MAKECMDGOALS)),)
MPI     := 1
endif
ifeq ($(MPI),1)
CC      := mpicc
CFLAGS  += -DQKV_MPI
endif
BUILD_CFLAGS := $(subst ",,$(subst ',,$(CFLAGS)))
$(shell mkdir -p $(B) && echo '$(CC) $(CFLAGS)' | cmp -s - $(B)/.flags || echo '$(CC) $(CFLAGS)' > $(B)/.flags)

# Kernels per instruction set (core/kernels/kernels.h): core/kernels/kernel_*.c is compiled once
# per path into $(B)/isa/<path>/kernels/ with that path's vector width and -m flags.
# w16avx2 is the 16-float source built for AVX2 (the compiler splits each vector
# in two): only the tests link it, so a machine without AVX-512 still checks the
# 16-wide code's results.
KERNEL_SRC := $(wildcard core/kernels/kernel_*.c)
ifneq ($(findstring x86_64,$(shell $(CC) -dumpmachine)),)
ISAS       := avx512 avx2 portable
TEST_ISAS  := w16avx2
else
ISAS       := portable
TEST_ISAS  :=
endif
ISA_FLAGS_avx512   := -DQKV_VW=16 -mavx512f -mavx512vl -mavx512bw -mavx512dq -mavx2 -mfma
ISA_FLAGS_avx2     := -DQKV_VW=8 -mavx2 -mfma
ISA_FLAGS_portable := -DQKV_VW=4
ISA_FLAGS_w16avx2  := -DQKV_VW=16 -mavx2 -mfma -Wno-psabi
KERNEL_OBJ      := $(foreach i,$(ISAS),$(KERNEL_SRC:core/kernels/%.c=$(B)/isa/$(i)/kernels/%.o))
TEST_KERNEL_OBJ := $(foreach i,$(TEST_ISAS),$(KERNEL_SRC:core/kernels/%.c=$(B)/isa/$(i)/kernels/%.o))

# libqkv.a is the library a user links: everything below the command line
# except the gradient checks. The command line (cli/), the bench command's
# measurements (cli/bench.c, cli/bench_models.c) and the gradient-check machinery and tables
# (core/check/, layers/check/) go into $(B)/libqkv_cli.a, which only ./qkv and
# the tests link.
LIB_DIRS := core core/ops core/kernels core/io layers optim data train train/tasks train/viz train/experiments
CHECK_DIRS := core/check layers/check
LIB_SRC  := $(filter-out $(KERNEL_SRC),$(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
# make STB=compiled: stb's PNG code compiled in from its headers (mk/stb_impl.c)
# instead of linking -lstb, for a target that has no libstb (make test-cross).
ifeq ($(STB),compiled)
LIB_SRC  += mk/stb_impl.c
STB_LIBS  =
endif
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o) $(KERNEL_OBJ)
CLI_SRC  := $(filter-out cli/main.c,$(wildcard cli/*.c)) \
            $(foreach d,$(CHECK_DIRS),$(wildcard $(d)/*.c))
# The page's C API (web/api.h), compiled natively too so that the tests call it
# (tests/test_web_api.c); the page's own module is web/api.mk's.
# Their native objects go to $(B)/web-native/, since $(B)/web/ (build/web/) is
# the site `make web` builds and a static host serves as it is.
CLI_SRC  += $(wildcard web/*.c)
CLI_OBJ  := $(patsubst $(B)/web/%,$(B)/web-native/%,$(CLI_SRC:%.c=$(B)/%.o))
CLI_LIB  := $(B)/libqkv_cli.a
TEST_SRC := $(wildcard tests/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/%.o) $(TEST_KERNEL_OBJ)
LIB      := $(B)/libqkv.a
# The shared library is built on Linux (ELF sonames); elsewhere (macOS: untested,
# docs/install.md) only the static one.
ifeq ($(shell uname -s),Linux)
SHLIB    := $(B)/libqkv.so.$(VERSION)
endif
SONAME   := libqkv.so.$(VERSION_MAJOR)

.PHONY: all test test-asan test-valgrind valgrind-build valgrind-train valgrind-suite fuzz fuzz-ci fuzz-build demo deps \
        bench bench-compare gradcheck example tutorial clean deps-build deps-test deps-torch deps-bench test-mpi bench-mpi \
        install uninstall test-install test-deps test-cross test-objects test-torch results
all: $(LIB) $(SHLIB) $(BIN)

# Phony and order-only below: they run first, once per make, and rebuild nothing.
deps-build:
	@mk/deps.sh $(DEPS_BUILD)
deps-test: deps-build
	@mk/deps.sh $(DEPS_TEST)
deps: deps-test
deps-torch:
	@mk/deps.sh $(DEPS_TORCH)
deps-bench:
	@mk/deps.sh $(DEPS_BENCH)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call quiet,CC,$<)$(CC) $(CFLAGS) $(STB_CFLAGS) $(DEFS) -MMD -MP -c $< -o $@

$(B)/web-native/%.o: web/%.c
	@mkdir -p $(dir $@)
	$(call quiet,CC,$<)$(CC) $(CFLAGS) $(STB_CFLAGS) $(DEFS) -MMD -MP -c $< -o $@

define isa_rule
$(B)/isa/$(1)/kernels/%.o: core/kernels/%.c
	@mkdir -p $$(dir $$@)
	$$(call quiet,CC,$$< [$(1)])$$(CC) $$(CFLAGS) $$(ISA_FLAGS_$(1)) -DQKV_ISA_SUFFIX=$(1) -MMD -MP -c $$< -o $$@
endef
$(foreach i,$(ISAS) $(TEST_ISAS),$(eval $(call isa_rule,$(i))))

$(B)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(call quiet,CC,$<)$(CC) $(CFLAGS) $(CHECK_CFLAGS) -DQKV_BUILD_ISAS='"$(ISAS)"' -MMD -MP -c $< -o $@

# A change of flags rebuilds everything. The packages come first.
$(LIB_OBJ) $(CLI_OBJ) $(TEST_OBJ) $(B)/cli/main.o: Makefile $(B)/.flags
$(LIB_OBJ) $(CLI_OBJ) $(B)/cli/main.o: | deps-build
$(TEST_OBJ): | deps-test

# ./qkv --version names the compiler flags it was built with.
$(B)/cli/cmd_version.o: DEFS = -DQKV_BUILD_CC='"$(CC)"' -DQKV_BUILD_CFLAGS='"$(BUILD_CFLAGS)"' -DQKV_BUILD_ISAS='"$(ISAS)"'

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(call quiet,AR,$@)ar rcs $@ $^

$(CLI_LIB): $(CLI_OBJ)
	@rm -f $@
	$(call quiet,AR,$@)ar rcs $@ $^

# The shared library: the same objects, soname libqkv.so.MAJOR; build/libqkv.so
# and build/libqkv.so.MAJOR are links to it, as an installed one has.
$(SHLIB): $(LIB_OBJ)
	$(call quiet,LD,$@)$(CC) -shared -Wl,-soname,$(SONAME) -o $@ $^ $(LDLIBS)
	@ln -sf $(notdir $@) $(B)/$(SONAME)
	@ln -sf $(notdir $@) $(B)/libqkv.so

$(BIN): $(B)/cli/main.o $(CLI_LIB) $(LIB)
	$(call quiet,LD,$@)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(CLI_LIB) $(LIB) $(LDLIBS)

test-objects: $(TEST_OBJ)
$(B)/run_tests: $(TEST_OBJ) $(CLI_LIB) $(LIB)
	$(call quiet,LD,$@)$(CC) $(CFLAGS) -o $@ $(TEST_OBJ) $(CLI_LIB) $(LIB) $(CHECK_LIBS) $(LDLIBS)

$(B)/example: docs/example.c $(LIB)
	$(call quiet,LD,$@)$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

example: build/example
	./build/example

$(B)/tutorial: docs/tutorial.c $(LIB)
	$(call quiet,LD,$@)$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

tutorial: build/tutorial
	./build/tutorial

# PyTorch round trip (python/, docs/torch.md): needs /usr/bin/python3 with torch; not part of `make test`.
$(B)/qkv_probe: python/qkv_probe.c $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

test-torch: $(BIN) $(B)/qkv_probe | deps-torch
	/usr/bin/python3 python/test_qkv_torch.py

test: $(B)/run_tests $(BIN) $(B)/example $(B)/tutorial | deps-test
	./$(B)/example > /dev/null
	tests/deps_test.sh
	tests/build_test.sh
ifeq ($(B),build)
	+tests/install_test.sh
endif
	cd tests && QKV_BIN=../$(BIN) QKV_TUTORIAL=../$(B)/tutorial CK_FORK=no ../$(B)/run_tests

# make results [NAME...] or make results NAME=a,b: the recorded runs that the docs'
# numbers come from (results/NAME.txt: the command and what it printed) run again
# and what they print now is compared with the record, timings aside
# (tests/docs_records.h); without a name, every long record, one at a time (a manual
# one, such as the 86-minute preset, runs only when named). RECORD=1 rewrites the
# named records (long and manual ones with this machine and the date) instead of
# comparing. make test runs the cheap records itself. Niced: the machine is shared.
RESULTS_GOALS := $(if $(filter results,$(MAKECMDGOALS)),$(filter $(basename $(notdir $(wildcard results/*.txt))),$(MAKECMDGOALS)))
comma := ,
empty :=
space := $(empty) $(empty)
NAME  ?= $(subst $(space),$(comma),$(strip $(RESULTS_GOALS)))
results: $(B)/run_tests $(BIN) $(B)/tutorial
	cd tests && QKV_BIN=../$(BIN) QKV_TUTORIAL=../$(B)/tutorial QKV_RESULTS=$(or $(NAME),long) \
	    QKV_RESULTS_RECORD=$(RECORD) CK_FORK=no CK_RUN_SUITE=docs CK_RUN_CASE=results nice -n 10 ../$(B)/run_tests
ifneq ($(RESULTS_GOALS),)
$(RESULTS_GOALS): ; @:
endif

# make install PREFIX=/usr/local DESTDIR=: ./qkv, libqkv.a, libqkv.so.VERSION (with
# its soname link and libqkv.so), the public headers (qkv.h and every header it
# includes, under include/qkv/ in their folders) and qkv.pc. A program then builds
# with `cc prog.c $$(pkg-config --cflags --libs qkv)`. make uninstall removes
# exactly these files (and include/qkv/ with the headers).
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PCDIR      ?= $(LIBDIR)/pkgconfig
PUBLIC_HEADERS = $(sort $(filter %.h,$(shell $(CC) -I. -MM -x c qkv.h)))
# A LIBDIR the dynamic linker does not search by default gets an rpath in qkv.pc's
# Libs, so a program linked through pkg-config finds libqkv.so.0 where it was
# installed (no LD_LIBRARY_PATH); the system's folders get none.
MULTIARCH      := $(shell $(CC) -print-multiarch 2>/dev/null)
SYSTEM_LIBDIRS := /lib /lib64 /usr/lib /usr/lib64 /usr/local/lib \
                  $(if $(MULTIARCH),/lib/$(MULTIARCH) /usr/lib/$(MULTIARCH) /usr/local/lib/$(MULTIARCH))
PC_RPATH        = $(if $(filter $(patsubst %/,%,$(LIBDIR)),$(SYSTEM_LIBDIRS)),,-Wl$(COMMA)-rpath$(COMMA)$${libdir} )
COMMA          := ,

install: all
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PCDIR)
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/qkv
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/libqkv.a
ifneq ($(SHLIB),)
	install -m 755 $(SHLIB) $(DESTDIR)$(LIBDIR)/libqkv.so.$(VERSION)
	ln -sf libqkv.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libqkv.so
endif
	for h in $(PUBLIC_HEADERS); do \
	    mkdir -p $(DESTDIR)$(INCLUDEDIR)/qkv/$$(dirname $$h) && \
	    install -m 644 $$h $(DESTDIR)$(INCLUDEDIR)/qkv/$$h || exit 1; \
	done
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' -e 's|@RPATH@|$(PC_RPATH)|' mk/qkv.pc.in > $(DESTDIR)$(PCDIR)/qkv.pc
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi
	@# pkg-config finds qkv.pc only in its own folders or PKG_CONFIG_PATH's: say what to set.
	@if [ -z "$(DESTDIR)" ] && [ "$$(realpath "$$(pkg-config --path qkv 2>/dev/null)" 2>/dev/null)" != \
	      "$$(realpath "$(PCDIR)/qkv.pc")" ]; then \
	    echo "note: pkg-config does not look in $(PCDIR); for \`pkg-config qkv\`: export PKG_CONFIG_PATH=$(PCDIR)"; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/qkv $(DESTDIR)$(PCDIR)/qkv.pc $(DESTDIR)$(LIBDIR)/libqkv.a \
	      $(DESTDIR)$(LIBDIR)/libqkv.so $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libqkv.so.$(VERSION)
	rm -rf $(DESTDIR)$(INCLUDEDIR)/qkv

# The two tests of the build itself, run by `make test`: mk/deps.sh against a fake
# apt-get, sudo and pkg-config (tests/deps_test.sh), and an install into a
# temporary DESTDIR that docs/example.c then builds against with pkg-config only.
test-deps:
	tests/deps_test.sh
	tests/build_test.sh
test-install: all
	+tests/install_test.sh

# ARM64: the same sources built with Debian's cross compiler (static, stb
# compiled in) into build-aarch64/, every test source compiled too, and a smoke
# set run under qemu-user and compared with this machine's build
# (tests/cross_test.sh says what and within what tolerance).
CROSS_CC ?= aarch64-linux-gnu-gcc
test-cross: all
	@mk/deps.sh gcc-aarch64-linux-gnu qemu-user-static
	$(MAKE) -j2 CC=$(CROSS_CC) B=build-aarch64 BIN=build-aarch64/qkv STB=compiled LDFLAGS=-static build-aarch64/qkv
	mkdir -p build-aarch64/check && ln -sf $$(pkg-config --variable=includedir check)/check*.h build-aarch64/check/
	$(MAKE) -j2 CC=$(CROSS_CC) B=build-aarch64 CHECK_CFLAGS="-I$(CURDIR)/build-aarch64/check $(STB_CFLAGS)" test-objects
	CROSS_CC=$(CROSS_CC) tests/cross_test.sh

# Data parallelism under mpirun (Open MPI: apt-get install libopenmpi-dev openmpi-bin).
test-mpi:
	$(MAKE) -j2 MPI=1 all
	tests/mpi_test.sh

bench-mpi:
	$(MAKE) -j2 MPI=1 all
	bench/mpi_bench.sh

# Sanitizers: the whole suite (and every ./qkv it runs) built with ASan and
# UBSan into build-asan/; any report, leaks included, fails the run. An
# allocation ASan cannot serve returns NULL, as malloc does, so the tests of
# qkv's out-of-memory messages run here too.
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
SAN_ENV   := ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp UBSAN_OPTIONS=print_stacktrace=1
test-asan:
	$(SAN_ENV) $(MAKE) B=build-asan BIN=build-asan/qkv OPT="$(SAN_FLAGS)" test

# Valgrind (memcheck): ./qkv train reverse --steps 10 and the suite (VALGRIND_SKIP below), built
# -O2 -g. Valgrind has no AVX-512 (its CPUID hides it, so the avx2 kernels run)
# and emulates each FMA lane with a helper call: a reversal step takes ~20 s
# there, so the training run is 10 steps (every code path runs in the first). On
# 2 OpenMP threads (the parallel branches run; passive waiting, since
# valgrind runs one thread at a time). Any invalid read or write, use of an
# uninitialised value, or leak "definitely", "indirectly" or "possibly" lost fails
# the run; tests/valgrind.supp holds libgomp's worker threads.
VALGRIND := valgrind -q --num-callers=40 --error-exitcode=1 --leak-check=full --show-leak-kinds=definite,indirect,possible \
            --errors-for-leak-kinds=definite,indirect,possible --suppressions=$(CURDIR)/tests/valgrind.supp
# The two runs are independent: `make -j2 test-valgrind` runs them side by side.
test-valgrind: valgrind-train valgrind-suite
valgrind-build:
	$(MAKE) B=build-valgrind BIN=build-valgrind/qkv OPT="-O2 -g" build-valgrind/run_tests build-valgrind/qkv
valgrind-train: valgrind-build
	OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive $(VALGRIND) ./build-valgrind/qkv train reverse --steps 10 --test-size 100 --quiet
# The suites valgrind runs are those that exercise memory: determinism and isa
# (the same bits on every instruction-set path and thread count, a third of the
# suite's time under valgrind) are left out, since valgrind's CPUID hides
# AVX-512 and it runs one thread at a time; ASan runs them, and so does make test.
VALGRIND_SKIP := determinism,isa
valgrind-suite: valgrind-build
	cd tests && OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive CK_FORK=no QKV_BIN=../build-valgrind/qkv \
	    QKV_TEST_SKIP=$(VALGRIND_SKIP) $(VALGRIND) ../build-valgrind/run_tests

# libFuzzer (Debian: clang, libclang-rt-14-dev, libomp-14-dev): each harness in
# tests/fuzz/fuzz_<name>.c runs FUZZ_SECONDS seconds from its seeds in
# tests/fuzz/<name>/; new inputs go to build-fuzz/corpus/<name>/, crashes to
# build-fuzz/crashes/. A crash fails the target: commit the input under
# tests/fuzz/<name>/ and `make test` replays it from then on (test_fuzz.c).
# `make fuzz` explores (a new random seed each run); `make fuzz-ci` is the
# reproducible pass CI runs: seed 1, FUZZ_RUNS inputs per harness, from the seeds
# alone, so a clean clone gets the same inputs as this machine.
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?= 100000
FUZZ_LIMIT   ?= -max_total_time=$(FUZZ_SECONDS)
FUZZ_CORPUS  ?= build-fuzz/corpus
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_FLAGS   := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
fuzz-build:
	$(MAKE) B=build-fuzz CC=clang OPT="$(FUZZ_FLAGS) -fsanitize=fuzzer-no-link" $(FUZZ_NAMES:%=build-fuzz/fuzz_%)

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz_targets.c tests/fuzz_targets.h $(CLI_LIB) $(LIB)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< tests/fuzz_targets.c $(CLI_LIB) $(LIB) $(LDLIBS)

fuzz: fuzz-build
	@mkdir -p build-fuzz/crashes
	@for name in $(FUZZ_NAMES); do \
	    mkdir -p $(FUZZ_CORPUS)/$$name; \
	    echo "fuzz $$name: $(FUZZ_LIMIT)"; \
	    ./build-fuzz/fuzz_$$name $(FUZZ_LIMIT) -close_fd_mask=3 -print_final_stats=1 \
	        -artifact_prefix=build-fuzz/crashes/$$name- $(FUZZ_CORPUS)/$$name tests/fuzz/$$name \
	        2> build-fuzz/fuzz_$$name.log; rc=$$?; \
	    grep -E "^stat::number_of_executed_units|^Done|ERROR|SUMMARY" build-fuzz/fuzz_$$name.log; \
	    if [ $$rc -ne 0 ]; then echo "fuzz $$name: FAILED, see build-fuzz/fuzz_$$name.log"; exit 1; fi; \
	done

fuzz-ci: fuzz-build
	rm -rf build-fuzz/ci-corpus
	$(MAKE) fuzz FUZZ_LIMIT="-seed=1 -runs=$(FUZZ_RUNS)" FUZZ_CORPUS=build-fuzz/ci-corpus

# The demo needs only ./qkv (and so only DEPS_BUILD).
demo: $(BIN)
	./$(BIN) train reverse

gradcheck: all
	./qkv gradcheck

bench: all
	./qkv bench

# Side by side with PyTorch and OpenBLAS (bench/compare.sh). OpenBLAS is linked
# only into this measuring program, never into qkv; the program links libqkv.a
# too, to check that qkv_gemm and cblas_sgemm compute the same product.
build/blas_bench: bench/blas_bench.c qkv.h qkv_internal.h build/libqkv.a | deps-bench
	@mkdir -p build
	$(CC) -O2 -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -I. -o $@ $< build/libqkv.a -lopenblas $(LDLIBS)

bench-compare: all build/blas_bench | deps-bench
	bench/compare.sh

clean:
	rm -rf build build-asan build-valgrind build-fuzz build-aarch64 build-clang qkv

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(B)/cli/main.d

# make web, web-lib, test-node: the WebAssembly build (mk/web.mk, docs/wasm.md).
include mk/web.mk
