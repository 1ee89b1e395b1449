"""`masgrid cache list|size|prune` on a cache written by the store, its files' ages set here;
sizes and counts are read back from the file system by the test itself."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from masgrid._private.actors.backends.base import Completion
from masgrid._private.actors.backends.response_store import ResponseStore
from masgrid._private.platform.commands.cli import main

DAY = 86400.0


def fill(root: Path) -> dict[str, list[Path]]:
    """Entries of two models, aged 0..n days; a dead writer's temp file and a stray file beside them."""
    store, now = ResponseStore(root), time.time()
    made: dict[str, list[Path]] = {}
    for model, n in (("org/big-model", 5), ("small", 3)):
        for i in range(n):
            key = f"{i:02x}{model[:1]}" + "0" * 61
            assert store.put(model, key, Completion(text="t" * (100 * (i + 1)), tokens_in=1, tokens_out=1))
            path = store.path(model, key)
            os.utime(path, (now - i * DAY - 60, now - i * DAY - 60))
            made.setdefault(model, []).append(path)
    temp = root / "small" / "00" / ".00s.abc.tmp"
    temp.write_text("partial")
    os.utime(temp, (now - 2 * DAY, now - 2 * DAY))
    (root / "README").write_text("not an entry")
    return made


def entries_on_disk(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*/??/*.json"))


def test_list_and_size(tmp_path: Path, capsys) -> None:
    made = fill(tmp_path)
    assert main(["cache", "list", "--dir", str(tmp_path), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["model"] for r in rows] == ["org/big-model", "small"]
    for row in rows:
        paths = made[row["model"]]
        assert row["entries"] == len(paths) and row["bytes"] == sum(p.stat().st_size for p in paths)
        assert row["oldest"] == min(p.stat().st_mtime for p in paths)
        assert row["newest"] == max(p.stat().st_mtime for p in paths)
    assert main(["cache", "size", "--dir", str(tmp_path)]) == 0
    total = sum(p.stat().st_size for p in entries_on_disk(tmp_path))
    assert "8 entries" in (out := capsys.readouterr().out) and f"({total} bytes), 2 models" in out
    assert main(["cache", "list", "--dir", str(tmp_path)]) == 0
    assert "org/big-model: 5 entries" in capsys.readouterr().out


def test_prune_older_than_removes_only_old_entries_and_dead_temps(tmp_path: Path, capsys) -> None:
    made = fill(tmp_path)
    assert main(["cache", "prune", "--dir", str(tmp_path), "--older-than", "2d", "--dry-run"]) == 0
    assert "would remove 4 of 8" in capsys.readouterr().out and len(entries_on_disk(tmp_path)) == 8
    assert main(["cache", "prune", "--dir", str(tmp_path), "--older-than", "2d"]) == 0
    kept = {p for paths in made.values() for p in paths[:2]}  # a minute and a day and a minute old
    assert set(entries_on_disk(tmp_path)) == kept
    assert not list(tmp_path.rglob(".*.tmp")) and (tmp_path / "README").exists()


def test_prune_to_a_size_drops_the_oldest_first(tmp_path: Path, capsys) -> None:
    made = fill(tmp_path)
    sizes = {p: p.stat().st_size for paths in made.values() for p in paths}
    newest_first = sorted(sizes, key=lambda p: -p.stat().st_mtime)
    budget = sum(sizes[p] for p in newest_first[:4]) + 10
    assert main(["cache", "prune", "--dir", str(tmp_path), "--max-size", str(budget)]) == 0
    left = entries_on_disk(tmp_path)
    assert sum(p.stat().st_size for p in left) <= budget and len(left) == 4
    assert {p.stat().st_mtime for p in left} == {p.stat().st_mtime for p in newest_first[:4]}


def test_prune_one_model(tmp_path: Path, capsys) -> None:
    made = fill(tmp_path)
    assert main(["cache", "prune", "--dir", str(tmp_path), "--all", "--model", "org/big-model"]) == 0
    assert entries_on_disk(tmp_path) == sorted(made["small"])
    assert main(["cache", "prune", "--dir", str(tmp_path), "--all", "--model", "nobody"]) == 1
    assert "no entries of model 'nobody'" in capsys.readouterr().err


@pytest.mark.parametrize("args, code, message", [
    (["list"], 1, "no cache directory at"),
    (["prune"], 2, "say what to remove"),
    (["prune", "--older-than", "soon"], 2, "--older-than 'soon': give a number and a unit"),
    (["prune", "--max-size", "lots"], 2, "--max-size 'lots': give bytes"),
])
def test_one_line_errors(tmp_path: Path, capsys, args: list[str], code: int, message: str) -> None:
    where = tmp_path / "missing" if args == ["list"] else tmp_path
    assert main(["cache", *args, "--dir", str(where)]) == code
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_the_environment_names_the_default_dir(tmp_path: Path, capsys, monkeypatch) -> None:
    fill(tmp_path)
    monkeypatch.setenv("MASGRID_CACHE_DIR", str(tmp_path))
    assert main(["cache", "size"]) == 0
    assert capsys.readouterr().out.startswith(f"{tmp_path}: 8 entries")
