"""Locates configuration files: the core tree (`conf/`, in a checkout or in an installed
wheel) and each installed family's own folder (`masgrid/families/<f>/conf`, `Family.conf`).

Prompts and data are files under these roots; every layer reads them through here. A path
such as `prompts/silo/tasks/I-01.yaml` is looked up in the core tree first, so a tree named
by `$MASGRID_CONF` can override a family's file, then in the families' folders in registry
order. The family registry is consulted lazily (it imports the families, which read here).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar
from collections.abc import Callable

F = TypeVar("F", bound=Callable[..., Any])
#: caches of data read from conf/, cleared together by `reload()`
_CACHES: list[Callable[[], None]] = []


@lru_cache(maxsize=1)
def conf_dir() -> Path:
    """`$MASGRID_CONF`, else the checkout's `conf/`, else the copy packed into the wheel."""
    env = os.environ.get("MASGRID_CONF")
    candidates = [Path(env)] if env else []
    package = Path(__file__).resolve().parents[1]
    candidates += [package.parent / "conf", package / "_conf"]
    for path in candidates:
        if (path / "config.yaml").is_file():
            return path
    raise FileNotFoundError(
        "masgrid configuration tree not found; set MASGRID_CONF to the repository's conf/ folder"
    )


@lru_cache(maxsize=1)
def conf_roots() -> tuple[Path, ...]:
    """The core tree, then every installed family's config folder (the order Hydra searches)."""
    from masgrid.family import families

    roots = [conf_dir()]
    for family in families().values():
        path = family.conf_path()
        if path is not None and path.is_dir() and path not in roots:
            roots.append(path)
    return tuple(roots)


def conf_file(relative: str) -> Path:
    """The first existing `relative` path under the config roots (a file or a folder)."""
    for root in conf_roots():
        path = root / relative
        if path.exists():
            return path
    raise FileNotFoundError(f"missing configuration file {relative} (looked in conf/ and every family's conf/)")


def conf_files(folder: str, roots: tuple[Path, ...] | None = None) -> list[tuple[str, Path]]:
    """Every file below `folder` in the given roots (default: all), as (path relative to its
    root, path), sorted by the relative path; a core file shadows a family file of that name."""
    found: dict[str, Path] = {}
    for root in roots if roots is not None else conf_roots():
        base = root / folder
        if base.is_dir():
            for path in base.rglob("*"):
                if path.is_file():
                    found.setdefault(path.relative_to(root).as_posix(), path)
    return sorted(found.items())


@lru_cache(maxsize=256)
def read_text(relative: str) -> str:
    """Text of a config file (prompt templates and other data), found as `conf_file` finds it."""
    return conf_file(relative).read_text(encoding="utf-8")


def conf_cached(maxsize: int = 64) -> Callable[[F], F]:
    """`lru_cache` for values derived from conf/ files (parsed YAML, rendered lists), so
    `reload()` can forget them all after a prompt file was edited."""
    def deco(fn: F) -> F:
        cached = lru_cache(maxsize=maxsize)(fn)
        _CACHES.append(cached.cache_clear)
        return cached  # type: ignore[return-value]
    return deco


def on_reload(clear: Callable[[], None]) -> None:
    """Register another cache of conf-derived values (e.g. prompt fingerprints)."""
    _CACHES.append(clear)


def reload() -> None:
    """Forget everything read from conf/ in this process: the next read sees edited files
    (and `$MASGRID_CONF` as it is now). For long-lived processes such as notebooks."""
    conf_dir.cache_clear()
    conf_roots.cache_clear()
    read_text.cache_clear()
    for clear in _CACHES:
        clear()
