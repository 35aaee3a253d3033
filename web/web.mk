# web/web.mk — the page (included by mk/web.mk; docs/web.md).
#
#   make web       also copies the page's files (index.html, *.css, *.js) to
#                  $(WEB_B)/, beside the WebAssembly module qkv_page.js/.wasm
#   make serve     serves $(WEB_B) on http://127.0.0.1:8000/ (PORT=...)
#   make test-web  drives the page in Debian's chromium (web/test_web.mjs):
#                  every view, its numbers against ./qkv's, no console error;
#                  screenshots in build/web-shots/
#
# The test's one npm package (playwright-core, pinned in web/package.json, its
# lockfile committed, no registry host in it: web/.npmrc) is installed by the
# step itself into web/node_modules with `npm ci`.

# The module (web/api.h): the C API web/*.c over the library, for a browser's
# page and worker. The heap's maximum is the page's memory budget (QKV_WEB_MAX_HEAP).
PAGE_API_SRC := $(wildcard web/*.c)
PAGE_API_OBJ := $(PAGE_API_SRC:%.c=$(WEB_B)/obj/%.o)
PAGE_EXPORTS := $(foreach f,$(shell grep -o '^[a-z ]*[ *]qkv_web_[a-z_]*' web/api.h | grep -o 'qkv_web_[a-z_]*'),"_$(f)",)
PAGE_LDFLAGS := -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=1GB -sTOTAL_STACK=8MB -sMODULARIZE=1 \
                -sEXPORT_NAME=createQkvPage -sENVIRONMENT=web,worker -sFILESYSTEM=1 \
                -sEXPORTED_FUNCTIONS='[$(PAGE_EXPORTS)"_malloc","_free"]' \
                -sEXPORTED_RUNTIME_METHODS='["ccall","cwrap","UTF8ToString"]'
$(PAGE_API_OBJ): mk/web.mk web/web.mk $(WEB_B)/.flags | deps-web
$(WEB_B)/qkv_page.js: $(PAGE_API_OBJ) $(WEB_LIB)
	$(WEB_ENV) $(EMCC) $(WEB_CFLAGS) $(PAGE_LDFLAGS) -o $@ $(PAGE_API_OBJ) $(WEB_LIB) -lm
web: $(WEB_B)/qkv_page.js
-include $(PAGE_API_OBJ:.o=.d)

PAGE_SRC  := web/index.html $(wildcard web/*.css) $(filter-out web/test_web.mjs,$(wildcard web/*.js))
PAGE_OUT  := $(PAGE_SRC:web/%=$(WEB_B)/%)
DEPS_PAGE := nodejs chromium
PORT      ?= 8000

.PHONY: serve test-web deps-page
web: $(PAGE_OUT)
$(PAGE_OUT): $(WEB_B)/%: web/%
	@mkdir -p $(dir $@)
	cp $< $@

deps-page:
	@mk/deps.sh $(DEPS_PAGE)

serve: web
	@echo "serving $(WEB_B) on http://127.0.0.1:$(PORT)/ (Ctrl-C stops)"
	cd $(WEB_B) && python3 -m http.server $(PORT) --bind 127.0.0.1

web/node_modules/.package-lock.json: web/package.json web/package-lock.json | deps-page
	cd web && npm ci --no-audit --no-fund

# The Node build's byte-for-byte tests run first (mk/web.mk), then the page's.
test-web: all web $(if $(wildcard tests/node_test.sh),test-node) web/node_modules/.package-lock.json
	node web/test_web.mjs $(WEB_B) ./$(BIN) build/web-shots
