# One command to serve, one command to test. Both set up whatever is missing first.
# uv comes from the package index if this machine does not have it yet.

SHELL := /bin/bash
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: serve test setup lint boot-check lint-docker client-deps

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv

.venv/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --python $(PYTHON)
	touch $@

setup: .venv/.synced

serve: setup
	HOST=$(HOST) PORT=$(PORT) .venv/bin/python -m deploy.serve

# pytest stays last, so its summary is the last line CI prints.
test: setup client-deps lint-docker boot-check
	.venv/bin/python -m pytest

# Install what the image installs into a fresh venv, boot its entrypoint, drive every route.
boot-check: setup
	.venv/bin/python -m deploy.boot_check --uv $(UV)

lint-docker: setup
	.venv/bin/hadolint Dockerfile

# The published @ag-ui/client the suite drives (tests/client); reinstalled when its lock changes.
tests/client/node_modules/.installed: tests/client/package.json tests/client/package-lock.json
	npm ci --prefix tests/client --no-audit --no-fund
	touch $@

client-deps: tests/client/node_modules/.installed

lint: setup
	.venv/bin/ruff check .
