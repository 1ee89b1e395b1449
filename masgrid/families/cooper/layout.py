"""The CooperBench dataset layout on disk, read into pydantic models.

The public release stores one feature pool per base commit as
`<repo>_task/task<ID>/` holding `setup.sh` (clone URL and `BASE_COMMIT=`), `run_tests.sh`
(or, in some pools, only `runner.sh`: the test command) and `feature<k>/` directories with
`feature.md`, `feature.patch` (the gold implementation) and `tests.patch`. Subset lists
(`subsets/lite.json`, `subsets/flash_10.json`, ...) name the grid points per task. Everything here only
reads files; a missing or malformed file is a `CooperDataError` naming the file and
where it belongs.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

from pydantic import BaseModel, Field

from masgrid.families.cooper.shellvars import assignments, expand_words, logical_lines, split

#: directory names of a pool and of a task inside it
_POOL_RE = re.compile(r"^[A-Za-z0-9_.-]+_task$")
_TASK_RE = re.compile(r"^task(\d+)$")
_FEATURE_RE = re.compile(r"^feature(\d+)$")
#: `BASE_COMMIT="<sha>"` and the `git clone <url>` line of setup.sh
_BASE_RE = re.compile(r"""^\s*BASE_COMMIT=["']?([0-9a-fA-F]{7,40})["']?\s*(?:#.*)?$""", re.MULTILINE)


class CooperDataError(ValueError):
    """A dataset file is missing or unreadable; the message is one line naming it."""


class CooperFeature(BaseModel):
    """One feature of a pool: its description, gold patch and the patch adding its tests."""

    id: int
    description: str
    patch: str = Field(description="gold implementation (unified diff against the base commit)")
    tests_patch: str = Field(description="diff adding/changing the feature's tests")


class CooperTaskData(BaseModel):
    """One feature pool at one base commit, as loaded from `<pool>/task<ID>/`."""

    pool: str = Field(description='directory of the pool, e.g. "pallets_jinja_task"')
    task_id: int
    repo: str = Field(description='"owner/name" of the source repository (from setup.sh\'s clone URL)')
    base_commit: str
    test_script: str = Field(description="text of run_tests.sh (or runner.sh when that is all there is)")
    features: dict[int, CooperFeature]
    root: Path = Field(description="the task directory")

    @property
    def name(self) -> str:
        return f"{self.pool}/{self.task_id}"


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CooperDataError(f"missing {what}: place it at {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CooperDataError(f"cannot read {what} at {path}: {exc}") from None


def repo_from_url(url: str) -> str:
    """`https://github.com/pallets/jinja(.git)` -> `pallets/jinja` (the last two path parts)."""
    parts = [p for p in re.split(r"[/:]", url.rstrip("/")) if p]
    if len(parts) < 2:
        raise CooperDataError(f"clone URL {url!r} has no owner/name")
    name = parts[-1][:-4] if parts[-1].endswith(".git") else parts[-1]
    return f"{parts[-2]}/{name}"


def parse_setup(text: str, path: Path) -> tuple[str, str]:
    """(owner/name, base commit) from a setup.sh text."""
    base = _BASE_RE.search(text)
    if base is None:
        raise CooperDataError(f"{path} has no BASE_COMMIT=<sha> line")
    values = assignments(text)
    for line in logical_lines(text):
        words = split(line) or []
        if words[:2] == ["git", "clone"]:
            urls = [w for w in expand_words(words[2:], values) if not w.startswith("-")]
            if urls and "$" not in urls[0]:
                return repo_from_url(urls[0]), base.group(1).lower()
    raise CooperDataError(f"{path} has no 'git clone <url>' line naming the source repository")


def task_dir(data_dir: Path, pool: str, task_id: int) -> Path:
    return Path(data_dir) / pool / f"task{task_id}"


def load_task(data_dir: Path, pool: str, task_id: int) -> CooperTaskData:
    """Read one task directory; every feature<k>/ needs feature.md, feature.patch, tests.patch."""
    root = task_dir(data_dir, pool, task_id)
    if not root.is_dir():
        raise CooperDataError(f"no task directory {root} (expected <data_dir>/<repo>_task/task<ID>/)")
    setup = root / "setup.sh"
    repo, base = parse_setup(_read(setup, "setup.sh"), setup)
    script_path = root / "run_tests.sh"
    if not script_path.exists() and (root / "runner.sh").exists():
        script_path = root / "runner.sh"
    test_script = _read(script_path, "run_tests.sh")
    features: dict[int, CooperFeature] = {}
    for sub in sorted(root.iterdir()):
        match = _FEATURE_RE.match(sub.name)
        if not (match and sub.is_dir()):
            continue
        fid = int(match.group(1))
        features[fid] = CooperFeature(
            id=fid,
            description=_read(sub / "feature.md", f"feature {fid}'s feature.md"),
            patch=_read(sub / "feature.patch", f"feature {fid}'s feature.patch"),
            tests_patch=_read(sub / "tests.patch", f"feature {fid}'s tests.patch"),
        )
    if len(features) < 2:
        raise CooperDataError(f"{root} has {len(features)} feature<k>/ directories; a pool needs at least 2")
    return CooperTaskData(pool=pool, task_id=task_id, repo=repo, base_commit=base, test_script=test_script,
                          features=dict(sorted(features.items())), root=root)


def list_tasks(data_dir: Path) -> list[tuple[str, int]]:
    """Every (pool, task id) under data_dir, sorted; directories not in the layout are skipped."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise CooperDataError(f"no dataset directory {data_dir} (point --data-dir at the release's dataset/)")
    found: list[tuple[str, int]] = []
    for pool in sorted(data_dir.iterdir()):
        if not (pool.is_dir() and _POOL_RE.match(pool.name)):
            continue
        for task in pool.iterdir():
            match = _TASK_RE.match(task.name)
            if match and task.is_dir():
                found.append((pool.name, int(match.group(1))))
    return sorted(found)


def load_subset(data_dir: Path, name: str) -> list[tuple[str, int, tuple[int, ...]]]:
    """Grid points of a subset list (`subsets/<name>.json`, e.g. lite, flash_10, team3_clean):
    (pool, task id, features). The release writes three shapes per task: `pairs` (two-agent
    pairs), `groups` (3-4 agents, appendix F) or neither, meaning every pair of that task's
    pool (lite: 8 tasks, 100 pairs); the last reads the pool's features from data_dir."""
    path = Path(data_dir) / "subsets" / f"{name}.json"
    text = _read(path, f"subset list {name!r}")
    out: list[tuple[str, int, tuple[int, ...]]] = []
    try:
        doc = json.loads(text)
        for t in doc["tasks"]:
            pool, task_id = str(t["repo"]), int(t["task_id"])
            listed = t.get("pairs", t.get("groups"))
            if listed is None:  # every pair of the pool
                listed = feature_pairs(load_task(Path(data_dir), pool, task_id))
            out.extend((pool, task_id, tuple(int(f) for f in combo)) for combo in listed)
    except CooperDataError:  # a task directory the list names is missing or malformed
        raise
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CooperDataError(f"{path} is not a subset list (tasks[].repo/task_id, with pairs, groups or "
                              f"neither): {exc}") from None
    return out


def feature_pairs(task: CooperTaskData, size: int = 2) -> list[tuple[int, ...]]:
    """All feature combinations of the pool of the given size: binom(n, size) grid points."""
    if not 1 <= size <= len(task.features):
        raise CooperDataError(f"{task.name} has {len(task.features)} features; cannot choose {size}")
    return list(itertools.combinations(sorted(task.features), size))
