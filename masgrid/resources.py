"""Locates the configuration tree (`conf/`) in a checkout or in an installed wheel.

Prompts are data under `conf/`; every layer reads them through here, so this module
imports nothing else of masgrid.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def conf_dir() -> Path:
    """`$MASGRID_CONF`, else the checkout's `conf/`, else the copy packed into the wheel."""
    env = os.environ.get("MASGRID_CONF")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent
    candidates += [here.parent / "conf", here / "_conf"]
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
