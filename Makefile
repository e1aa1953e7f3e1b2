# One command to serve, one command to test. Both set up whatever is missing first.
# uv comes from the package index if this machine does not have it yet.

SHELL := /bin/bash
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
HOST ?= 127.0.0.1
PORT ?= 8000
IMAGE_ENGINE ?= auto

.PHONY: serve test setup lint boot-check image-check lint-docker client-deps inspector-deps inspector-bundle browser engine valgrind \
	screenshots captures matrix bench load tour

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv

.venv/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --python $(PYTHON)
	touch $@

# Then what each runtime needs beyond the Python lock (deploy/setup.py: e.g. a sidecar's npm ci).
setup: .venv/.synced
	.venv/bin/python -m deploy.setup

serve: setup
	HOST=$(HOST) PORT=$(PORT) .venv/bin/python -m deploy.serve

# pytest stays last, so its summary is the last line CI prints.
test: setup client-deps inspector-deps browser engine valgrind lint-docker boot-check image-check
	.venv/bin/python -m pytest

# Install what the image installs into a fresh venv, boot its entrypoint, drive every route.
boot-check: setup
	.venv/bin/python -m deploy.boot_check --uv $(UV)

# Build the Dockerfile (docker, else podman), run the image with -p, drive every route from outside,
# stop it. Installs podman and makes a stand-in base image where needed (docs/deploy.md);
# IMAGE_ENGINE=docker or IMAGE_ENGINE=podman picks the engine instead.
image-check: setup
	.venv/bin/python -m deploy.image_check --engine $(IMAGE_ENGINE)

lint-docker: setup
	.venv/bin/hadolint Dockerfile

# The published @ag-ui/client the suite drives (tests/client); reinstalled when its lock changes.
tests/client/node_modules/.installed: tests/client/package.json tests/client/package-lock.json
	npm ci --prefix tests/client --no-audit --no-fund
	touch $@

client-deps: tests/client/node_modules/.installed

# The inspector page's npm project (web/): esbuild and the @ag-ui/client it bundles.
web/node_modules/.installed: web/package.json web/package-lock.json
	npm ci --prefix web --no-audit --no-fund
	touch $@

inspector-deps: web/node_modules/.installed

# Rebuild the page's committed client bundle after changing web/ (tests/test_inspector_bundle.py checks it).
inspector-bundle: inspector-deps
	node web/build.mjs

# Debian's Chromium for the inspector's browser tests: Playwright drives it and never downloads one.
# (apt-get update only when the package lists do not know it yet.)
/usr/bin/chromium:
	apt-get install -y --no-install-recommends chromium || (apt-get update && apt-get install -y --no-install-recommends chromium)

browser: /usr/bin/chromium

# Debian's Redis for the shared-state tests (AGUI_STATE_URL): tests/engine.py starts its own
# redis-server on a free loopback port for each use; nothing else runs it.
/usr/bin/redis-server:
	apt-get install -y --no-install-recommends redis-server || (apt-get update && apt-get install -y --no-install-recommends redis-server)

engine: /usr/bin/redis-server

# Debian's Valgrind for the benchmark's instruction counts (callgrind: CPU per run that does not
# move with the machine's load; benchmarks/instructions.py).
/usr/bin/valgrind:
	apt-get install -y --no-install-recommends valgrind || (apt-get update && apt-get install -y --no-install-recommends valgrind)

valgrind: /usr/bin/valgrind

# The README's pictures of the page, taken by its browser tests.
screenshots: setup inspector-deps browser
	.venv/bin/python -m pytest -q tests/test_inspector.py
	mkdir -p docs/screenshots
	cp test-artifacts/inspector/readme-*.png docs/screenshots/

lint: setup
	.venv/bin/ruff check .

# Re-record every surface on every runtime (offline model) into tests/captures, then the matrix.
# CAPTURE_RUNTIMES="name ..." re-records only those runtimes (the others' captures stay as they are).
captures: setup
	.venv/bin/python -m tests.capture $(CAPTURE_RUNTIMES)
	.venv/bin/python -m tests.matrix

# docs/matrix.md from the committed captures (tests/test_matrix.py fails when it is stale).
matrix: setup
	.venv/bin/python -m tests.matrix

# What the emitter and the app cost next to the bare bridges and a raw SSE floor, in one run:
# prints the table, writes benchmarks/results.json and docs/performance.md. BENCH_ARGS=--quick smoke-tests it.
bench: setup valgrind
	.venv/bin/python -m benchmarks.bench $(BENCH_ARGS)

# Mixed, verified runs (text, tool, approval+resume, delegation) on every route of a RUNNING server
# (`make serve` in another shell); loopback only, bounded, stops by itself. LOAD_ARGS=--spawn starts its own.
CONCURRENCY ?= 200
RUNS ?= 400
load: setup
	.venv/bin/python -m benchmarks.load --url http://$(HOST):$(PORT) --concurrency $(CONCURRENCY) --runs $(RUNS) $(LOAD_ARGS)

# Every sample prompt on every route of a RUNNING server (`make serve`, on your model), every stream
# verified; prints route x surface -> pass / FAIL with the first reason of each failure.
tour: setup
	.venv/bin/agui-tour http://$(HOST):$(PORT)
