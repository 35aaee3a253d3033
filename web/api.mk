# web/api.mk — the page's WebAssembly module: web/api.h's C API compiled by emcc
# against the library's WebAssembly build (mk/web.mk: $(WEB_LIB)), and its test.
#
#   $(WEB_B)/qkv_page.js, .wasm        the page's module (a Web Worker's
#                                      importScripts; createQkvPage() resolves to it)
#   $(WEB_B)/node/qkv_page.js, .wasm   the same C for Node (the tests)
#   make test-web-api                  web/test_api.mjs: every call of the Node
#                                      module against ./qkv's output
#
# Exported: every qkv_web_* function web/api.h declares (read from it, so the
# header is the one list), malloc and free; the runtime's ccall, cwrap,
# UTF8ToString and HEAPU8. The heap grows up to QKV_WEB_MAX_HEAP (1 GiB), the
# page's memory budget (train/memory.c reads emscripten_get_heap_max). The
# native build of the same C is in the tests' archive (the Makefile's CLI_SRC).

WEB_API_SRC     := $(wildcard web/*.c)
WEB_API_OBJ     := $(WEB_API_SRC:%.c=$(WEB_B)/obj/%.o)
WEB_API_SED     := s/^const char \*\(qkv_web_[a-z_]*\)(.*/_\1/p; s/^void \(qkv_web_[a-z_]*\)(.*/_\1/p
WEB_API_EXPORTS := $(shell sed -n '$(WEB_API_SED)' web/api.h)
comma := ,
empty :=
space := $(empty) $(empty)
WEB_API_LDFLAGS := -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=1GB -sTOTAL_STACK=8MB -sMODULARIZE=1 \
                   -sEXPORT_NAME=createQkvPage \
                   -sEXPORTED_FUNCTIONS=$(subst $(space),$(comma),$(strip $(WEB_API_EXPORTS) _malloc _free)) \
                   -sEXPORTED_RUNTIME_METHODS=ccall,cwrap,UTF8ToString,HEAPU8

.PHONY: web-api test-web-api
web: $(WEB_B)/qkv_page.js
web-api: $(WEB_B)/qkv_page.js $(WEB_B)/node/qkv_page.js

$(WEB_API_OBJ): web/api.mk $(WEB_B)/.flags | deps-web

$(WEB_B)/qkv_page.js: $(WEB_API_OBJ) $(WEB_LIB) web/api.h
	$(WEB_ENV) $(EMCC) $(WEB_CFLAGS) $(WEB_API_LDFLAGS) -sENVIRONMENT=web,worker -o $@ $(WEB_API_OBJ) $(WEB_LIB) -lm

# Node 20's fetch cannot load a file path, which emscripten 3.1.6's asynchronous
# loader tries first: compiled synchronously there.
$(WEB_B)/node/qkv_page.js: $(WEB_API_OBJ) $(WEB_LIB) web/api.h
	@mkdir -p $(dir $@)
	$(WEB_ENV) $(EMCC) $(WEB_CFLAGS) $(WEB_API_LDFLAGS) -sENVIRONMENT=node -sWASM_ASYNC_COMPILATION=0 -o $@ \
	    $(WEB_API_OBJ) $(WEB_LIB) -lm

test-web-api: all $(WEB_B)/node/qkv_page.js
	node web/test_api.mjs $(WEB_B)/node/qkv_page.js ./$(BIN)

-include $(WEB_API_OBJ:.o=.d)
