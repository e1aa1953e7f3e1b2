"""The Dockerfile's base image, made local before the build: from the engine's store, the
registry, or, where no container registry is reachable, a stand-in made from Debian packages.

Why: the image check builds the project's Dockerfile unchanged, and its ``FROM`` names the
official ``python:<version>-slim-<suite>`` image. On a machine that reaches Debian's package
archive but no container registry, that image is made here instead: ``debootstrap --variant=minbase``
of the same Debian suite plus Debian's ``python3`` and ``pip``, laid out like the official image
(``python``/``pip`` on ``/usr/local/bin``, no PEP 668 marker, ``LANG=C.UTF-8``), imported under
the base image's own name. Its Python is Debian's (3.11.2 on bookworm, where the official image
has 3.11.14); the check says which base it used.

The stand-in's root file system is kept as a tarball in ``~/.cache/agui-image-check`` and made
again when missing or when ``RECIPE`` changes; the engine's image store keeps the imported image,
labelled with the recipe's key so an outdated stand-in is replaced.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from deploy.engine import Cli, install

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agui-image-check"
STAND_IN_LABEL = "agui.image-check.stand-in"
OFFICIAL = re.compile(r"(?:[\w.-]+/)*python:(?P<version>\d+\.\d+)(?:\.\d+)?-slim-(?P<suite>[a-z]+)")


@dataclass(frozen=True)
class Recipe:
    """How the stand-in for ``python:<version>-slim-<suite>`` is made."""

    suite: str
    version: str
    packages: tuple[str, ...] = ("python3", "python3-pip", "ca-certificates")
    links: tuple[tuple[str, str], ...] = (
        ("python", "/usr/bin/python3"),
        ("python3", "/usr/bin/python3"),
        ("pip", "/usr/bin/pip3"),
        ("pip3", "/usr/bin/pip3"),
    )
    emptied: tuple[str, ...] = ("var/cache/apt", "var/lib/apt/lists", "usr/share/doc", "usr/share/man",
                                "usr/share/locale")  # fmt: skip
    config: tuple[str, ...] = (
        "ENV LANG=C.UTF-8",
        "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
        'CMD ["python3"]',
    )

    @property
    def key(self) -> str:
        return hashlib.sha256(repr(self).encode()).hexdigest()[:12]


class BaseImageError(Exception):
    """The base image could not be had; the message says why."""


def dockerfile_bases(dockerfile: Path) -> list[str]:
    """The images the Dockerfile's stages start ``FROM`` (not earlier stages), ARG defaults filled in."""
    args: dict[str, str] = {}
    stages: set[str] = set()
    bases: list[str] = []
    for line in dockerfile.read_text().replace("\\\n", " ").splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        keyword = words[0].upper()
        if keyword == "ARG" and len(words) > 1 and "=" in words[1]:
            name, value = words[1].split("=", 1)
            args[name] = value
        elif keyword == "FROM":
            image = next(word for word in words[1:] if not word.startswith("--"))
            image = re.sub(r"\$\{?(\w+)\}?", lambda match: args.get(match.group(1), ""), image)
            if image not in stages and image not in bases:
                bases.append(image)
            if len(words) > 2 and words[-2].upper() == "AS":
                stages.add(words[-1])
    return bases


def recipe_for(image: str) -> Recipe | None:
    match = OFFICIAL.fullmatch(image)
    return Recipe(match["suite"], match["version"]) if match else None


@contextmanager
def _locked(cache: Path) -> Iterator[None]:
    """One maker at a time per machine: two checks at once share the tarball and the store."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _run(command: list[str], what: str, timeout_s: float) -> str:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise BaseImageError(f"{what}: no end within {timeout_s:g} s") from None
    if result.returncode != 0:
        raise BaseImageError(f"{what} failed ({result.returncode}):\n{(result.stdout + result.stderr)[-3000:]}")
    return result.stdout


def make_rootfs(recipe: Recipe, cache: Path) -> Path:
    """The stand-in's root file system as a tarball in ``cache`` (made when missing)."""
    tarball = cache / f"python{recipe.version}-slim-{recipe.suite}-{recipe.key}.tar"
    if tarball.exists():
        return tarball
    install(("debootstrap",))
    print(f"image-check: debootstrap={recipe.suite} | making the stand-in base (about a minute)", flush=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix="rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        include = f"--include={','.join(recipe.packages)}"
        _run(["debootstrap", "--variant=minbase", include, recipe.suite, str(root)], "debootstrap", 1200)
        version = "import sys; print('%d.%d' % sys.version_info[:2])"
        found = _run(["chroot", str(root), "python3", "-c", version], "python3 in the stand-in", 60).strip()
        if found != recipe.version:
            raise BaseImageError(f"Debian {recipe.suite} has python {found}, the base image has {recipe.version}")
        for marker in root.glob("usr/lib/python3*/EXTERNALLY-MANAGED"):
            marker.unlink()  # the official image lets pip install into the system Python
        for name, target in recipe.links:
            (root / "usr/local/bin" / name).symlink_to(target)
        for folder in recipe.emptied:
            _run(["find", str(root / folder), "-mindepth", "1", "-delete"], f"emptying {folder}", 120)
        partial = Path(tmp) / "rootfs.tar"
        _run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(partial), "."], "tar", 600)
        partial.replace(tarball)
    return tarball


def ensure(cli: Cli, image: str, cache: Path = CACHE) -> str:
    """Make ``image`` present in the engine's store; returns where it came from."""
    recipe = recipe_for(image)
    with _locked(cache):
        found = cli.run("image", "inspect", "--format", f'{{{{index .Config.Labels "{STAND_IN_LABEL}"}}}}', image)
        made_by = found.stdout.strip().replace("<no value>", "") if found.returncode == 0 else None
        if made_by == "":
            return "from the engine's image store"
        if recipe is not None and made_by == recipe.key:
            return "the stand-in made earlier, from the engine's image store"
        if made_by is None:  # not in the store (an outdated stand-in is made again, not pulled over)
            pulled = cli.run("pull", image, timeout_s=900)
            if pulled.returncode == 0:
                return "pulled from its registry"
            print(f"image-check: pull=failed | {(pulled.stderr.strip().splitlines() or [''])[-1]}", flush=True)
        if recipe is None:
            raise BaseImageError(f"{image} is not in the engine's store, cannot be pulled, and has no stand-in")
        tarball = make_rootfs(recipe, cache)
        config = (*recipe.config, f"LABEL {STAND_IN_LABEL}={recipe.key}")
        changes = [arg for line in config for arg in ("--change", line)]
        imported = cli.run("import", *changes, str(tarball), image, timeout_s=600)
        if imported.returncode != 0:
            raise BaseImageError(f"importing the stand-in failed:\n{imported.stderr[-2000:]}")
        return f"imported a stand-in (Debian {recipe.suite}'s python{recipe.version}) from {tarball}"
