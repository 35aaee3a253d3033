# web/web.mk — the page (included by mk/web.mk; docs/web.md).
#
#   make web       also copies the page's files (index.html, *.css, *.js) to
#                  $(WEB_B)/, beside the WebAssembly module qkv_page.js/.wasm
#                  (web/api.mk builds it)
#   make serve     serves $(WEB_B) on http://127.0.0.1:8000/ (PORT=...)
#   make test-web  drives the page in Debian's chromium (web/test_web.mjs):
#                  every view, its numbers against ./qkv's, no console error;
#                  screenshots in build/web-shots/
#
# The test's one npm package (playwright-core, pinned in web/package.json, its
# lockfile committed, no registry host in it: web/.npmrc) is installed by the
# step itself into web/node_modules with `npm ci`.

PAGE_SRC  := web/index.html $(wildcard web/*.css) $(filter-out web/test_web.mjs,$(wildcard web/*.js))
PAGE_OUT  := $(PAGE_SRC:web/%=$(WEB_B)/%)
DEPS_PAGE := nodejs npm chromium
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

# The Node build's byte-for-byte tests (mk/web.mk) and the C API's (web/api.mk)
# run first, then the page's.
test-web: all web test-node test-web-api web/node_modules/.package-lock.json
	node web/test_web.mjs $(WEB_B) ./$(BIN) build/web-shots
