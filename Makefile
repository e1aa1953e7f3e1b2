# One command to serve, one command to test. Both set up whatever is missing first.
# uv comes from the package index if this machine does not have it yet.

SHELL := /bin/bash
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: serve test setup lint

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv

.venv/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --python $(PYTHON)
	touch $@

setup: .venv/.synced

serve: setup
	HOST=$(HOST) PORT=$(PORT) .venv/bin/python -m deploy.serve

test: setup
	.venv/bin/python -m pytest

lint: setup
	.venv/bin/ruff check .
