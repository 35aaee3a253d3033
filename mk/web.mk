# mk/web.mk — the WebAssembly build (included by the Makefile; docs/wasm.md).
#
#   make web-lib   $(WEB_B)/libqkv.a: every library source (core/ layers/ data/
#                  optim/ train/, the gradient checks included; not cli/) compiled
#                  by emscripten's emcc, objects under $(WEB_B)/obj/
#   make web       that, $(WEB_B)/qkv.js (./qkv's command line under Node: real
#                  files, exit codes passed through) and, when web/web.mk exists,
#                  the page it builds
#   make test-node the Node build against the native one, byte for byte
#                  (tests/node_test.sh)
#
# emcc, node and chromium (for the page's tests) are Debian packages installed by
# mk/deps.sh. Debian's emcc runs its JavaScript optimizer under node and needs
# Debian's own Node module folder (node-acorn's) on NODE_PATH; its prebuilt C
# library lives in a frozen cache (/usr/share/emscripten/cache) that nothing here
# writes: EM_CACHE, if set, must name a cache as complete.
#
# There is no OpenMP under emcc: the `omp` pragmas are ignored and
# core/kernels/omp_shim.h stands in for the runtime (one thread, the same bits).
# The kernels are built for 128-bit WebAssembly SIMD (-msimd128).

WEB_B     := build/web
EMCC      ?= emcc
EMAR      ?= emar
DEPS_WEB  := $(DEPS_BUILD) emscripten nodejs
# Read when a recipe runs: node-acorn may be installed by this very run.
WEB_NODE_PATH = $(patsubst %/acorn/package.json,%,$(firstword $(shell dpkg -L node-acorn 2>/dev/null | grep '/acorn/package.json$$')))
WEB_ENV    = NODE_PATH=$(WEB_NODE_PATH)$(if $(NODE_PATH),:$(NODE_PATH))

WEB_OPT    ?= -O3
WEB_CFLAGS := $(WEB_OPT) -std=c11 -D_DEFAULT_SOURCE -msimd128 -ffp-contract=off -fno-trapping-math -fno-math-errno \
              -Wall -Wextra -Wno-unknown-pragmas -I.
ifeq ($(WERROR),1)
WEB_CFLAGS += -Werror
endif
# The library's memory limit is the heap's maximum (train/memory.c reads
# emscripten_get_heap_max); 2 GiB is what a 32-bit heap can address with signed
# pointers. WASM_ASYNC_COMPILATION=0: Node 20's built-in fetch cannot load a
# file path, which emscripten 3.1.6's asynchronous loader tries first.
WEB_LDFLAGS := -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=2GB -sTOTAL_STACK=8MB
WEB_NODE_LDFLAGS := $(WEB_LDFLAGS) -sENVIRONMENT=node -sNODERAWFS=1 -sWASM_ASYNC_COMPILATION=0 -sEXIT_RUNTIME=1

# The paths of the ISA table this build has (core/kernels/kernels.h).
# wasm computes each multiply-add exactly in f64x2 pairs (core/kernels/exact_fma.h);
# portable is the same source without SIMD, the reference QKV_ISA=portable runs.
WEB_ISAS               := wasm portable
ISA_FLAGS_web_wasm     := -DQKV_VW=4 -msimd128
ISA_FLAGS_web_portable := -DQKV_VW=4 -mno-simd128

WEB_LIB_SRC := $(LIB_SRC) $(foreach d,$(CHECK_DIRS),$(wildcard $(d)/*.c)) mk/stb_impl.c
WEB_LIB_OBJ := $(WEB_LIB_SRC:%.c=$(WEB_B)/obj/%.o) \
               $(foreach i,$(WEB_ISAS),$(KERNEL_SRC:core/kernels/%.c=$(WEB_B)/obj/isa/$(i)/kernels/%.o))
WEB_CLI_SRC := $(wildcard cli/*.c)
WEB_CLI_OBJ := $(WEB_CLI_SRC:%.c=$(WEB_B)/obj/%.o)
WEB_LIB     := $(WEB_B)/libqkv.a

# The compiler and flags, in $(WEB_B)/.flags: rewritten (and so rebuilding
# everything) only when they change; its recipe runs whenever a web object is
# wanted, whatever the goal that wants it.
WEB_BUILD_FLAGS := $(subst ",,$(subst ',,$(EMCC) $(WEB_CFLAGS)))
$(WEB_B)/.flags: web-flags-check
	@mkdir -p $(WEB_B)
	@echo '$(WEB_BUILD_FLAGS)' | cmp -s - $@ || echo '$(WEB_BUILD_FLAGS)' > $@

.PHONY: web web-lib deps-web test-node web-flags-check
deps-web:
	@mk/deps.sh $(DEPS_WEB)

web-lib: $(WEB_LIB)
web: $(WEB_LIB) $(WEB_B)/qkv.js

$(WEB_B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(WEB_ENV) $(EMCC) $(WEB_CFLAGS) $(STB_CFLAGS) $(WEB_DEFS) -MMD -MP -c $< -o $@

define web_isa_rule
$(WEB_B)/obj/isa/$(1)/kernels/%.o: core/kernels/%.c
	@mkdir -p $$(dir $$@)
	$$(WEB_ENV) $$(EMCC) $$(WEB_CFLAGS) $$(ISA_FLAGS_web_$(1)) -DQKV_ISA_SUFFIX=$(1) -MMD -MP -c $$< -o $$@
endef
$(foreach i,$(WEB_ISAS),$(eval $(call web_isa_rule,$(i))))

$(WEB_LIB_OBJ) $(WEB_CLI_OBJ): mk/web.mk $(WEB_B)/.flags | deps-web
$(WEB_B)/obj/cli/cmd_version.o: WEB_DEFS = -DQKV_BUILD_CC='"emcc"' -DQKV_BUILD_CFLAGS='"$(WEB_BUILD_FLAGS)"' \
                                           -DQKV_BUILD_ISAS='"$(WEB_ISAS)"'

$(WEB_LIB): $(WEB_LIB_OBJ)
	@rm -f $@
	$(WEB_ENV) $(EMAR) rcs $@ $^

# ./qkv under Node: node build/web/qkv.js train reverse ...
$(WEB_B)/qkv.js: $(WEB_CLI_OBJ) $(WEB_LIB)
	$(WEB_ENV) $(EMCC) $(WEB_CFLAGS) $(WEB_NODE_LDFLAGS) -o $@ $(WEB_CLI_OBJ) $(WEB_LIB) -lm

test-node: all web
	tests/node_test.sh

-include $(WEB_LIB_OBJ:.o=.d) $(WEB_CLI_OBJ:.o=.d)

# The page (web/web.mk, its own room) adds its files to `make web`; its C API's
# module is web/api.mk's.
-include web/web.mk
-include web/api.mk
