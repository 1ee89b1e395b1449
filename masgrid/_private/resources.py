"""Locates the configuration tree (`conf/`) in a checkout or in an installed wheel.

Prompts are data under `conf/`; every layer reads them through here, so this module
imports nothing else of masgrid.
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


@lru_cache(maxsize=256)
def read_text(relative: str) -> str:
    """Text of a file under `conf/` (prompt templates and other data)."""
    path = conf_dir() / relative
    if not path.is_file():
        raise FileNotFoundError(f"missing configuration file conf/{relative}")
    return path.read_text(encoding="utf-8")


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
    read_text.cache_clear()
    for clear in _CACHES:
        clear()
