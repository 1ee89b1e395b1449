"""Where a run's CooperBench data lives: the dataset, the source clones, the caches.

`data_dir: null` means the synthetic demo pool (synthetic.py), written once under the
cache directory with real git, so `masgrid run task=cooper/<demo pool>/1` works on a
fresh checkout without any download.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel

from masgrid.families.cooper.options import CooperOptions


class CooperPaths(BaseModel):
    data_dir: Path
    repos_dir: Path
    cache_dir: Path


def default_cache_dir() -> Path:
    """Where runs and `masgrid cooper eval` keep test environments, the demo pool and checkouts
    when no cache directory is given: $MASGRID_COOPER_CACHE, else $XDG_CACHE_HOME/masgrid/cooper,
    else ~/.cache/masgrid/cooper (one rule for both, so an environment built by one is reused by
    the other)."""
    env = os.environ.get("MASGRID_COOPER_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache").resolve() / "masgrid" / "cooper"


def resolve_paths(options: CooperOptions) -> CooperPaths:
    """Absolute paths for this machine; the demo pool is written when no data_dir is given."""
    cache = Path(options.cache_dir).expanduser().resolve() if options.cache_dir else default_cache_dir()
    if options.data_dir is None:
        pool = demo_pool(str(cache))
        data_dir, repos_default = Path(pool.data_dir), Path(pool.repos_dir)
    else:
        data_dir = Path(options.data_dir).expanduser().resolve()
        repos_default = data_dir.parent / "repos"
    repos = Path(options.repos_dir).expanduser().resolve() if options.repos_dir else repos_default
    return CooperPaths(data_dir=data_dir, repos_dir=repos, cache_dir=cache)


@lru_cache(maxsize=4)
def demo_pool(cache_dir: str) -> DemoPool:
    """The synthetic pool under <cache_dir>/demo, written once; a staging directory renamed
    into place, so concurrent first runs never see half a pool."""
    from masgrid.families.cooper.synthetic import write_synthetic_pool

    root = Path(cache_dir) / "demo"
    described = root / "pool.json"
    if not described.exists():
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".demo-", dir=root.parent))
        pool = write_synthetic_pool(staging)
        moved = {k: str(v).replace(str(staging), str(root)) for k, v in pool.model_dump().items()
                 if k in ("data_dir", "repos_dir")}
        demo = DemoPool(pool=pool.pool, task_id=pool.task_id, expected=dict(pool.expected), **moved)
        (staging / "pool.json").write_text(demo.model_dump_json())
        try:
            staging.rename(root)
        except OSError:  # another process finished first: keep its copy
            shutil.rmtree(staging, ignore_errors=True)
    return DemoPool.model_validate_json(described.read_text())


class DemoPool(BaseModel):
    """What a run needs to know of the written demo pool."""

    data_dir: Path
    repos_dir: Path
    pool: str
    task_id: int
    expected: dict[str, str]
