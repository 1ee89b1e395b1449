"""The response cache's files: damaged entries are misses (logged once), never crashes, and
writers in several processes never leave a partial entry for a reader to find."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
from pathlib import Path

import pytest

from masgrid._private.actors.backends.base import Completion
from masgrid._private.actors.backends.response_store import ResponseStore, folder_model, model_folder
from masgrid._private.envs.tool_calls import ToolCall

KEY = "ab" + "0" * 62


def answer(n: int) -> Completion:
    return Completion(text=f"answer {n} " + "x" * 2000, tokens_in=100 + n, tokens_out=n, usage_source="server",
                      latency_s=n / 10, finish_reason="stop",
                      tool_calls=[ToolCall(id="c1", name="look", arguments={"n": n}, raw_arguments=f'{{"n":{n}}}')])


def test_round_trip_keeps_what_the_original_call_returned(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    original = answer(3).model_copy(update={"attempts": 2, "started_at": 1.0, "tokens_cached": 64})
    assert store.put("org/model", KEY, original)
    got = store.get("org/model", KEY)
    assert got is not None and got.from_cache and got.attempts == 0 and got.started_at is None
    expect = {"text": original.text, "tool_calls": original.tool_calls, "tokens_in": 103, "tokens_out": 3,
              "tokens_cached": 64, "usage_source": "server", "finish_reason": "stop", "latency_s": 0.3}
    assert {k: getattr(got, k) for k in expect} == expect
    # one file per entry under the model's folder, and nothing else left behind
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()] == [
        f"org%2Fmodel/ab/{KEY}.json"]
    assert store.get("other", KEY) is None  # another model's folder


def test_failed_calls_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only successful"):
        ResponseStore(tmp_path).put("m", KEY, Completion(error="server_error: boom"))


@pytest.mark.parametrize("content", [
    b"", b"{", b"[]", b"null", b'{"format": 1}',
    b'{"format": 2, "key": "KEY", "completion": {"text": "x"}}',
    b'{"format": 1, "key": "another", "completion": {"text": "x"}}',
    b'{"format": 1, "key": "KEY", "completion": {"text": "x", "error": "e"}}',
    b'{"format": 1, "key": "KEY", "completion": {"tokens_in": "many"}}',
    b'{"format": 1, "key": "KEY", "completion": "text"}',
    b"\xff\xfe not utf-8",
])
def test_damaged_entries_are_misses_logged_once(tmp_path: Path, content: bytes, caplog) -> None:
    store = ResponseStore(tmp_path)
    path = store.path("m", KEY)
    path.parent.mkdir(parents=True)
    path.write_bytes(content.replace(b"KEY", KEY.encode()))
    with caplog.at_level(logging.WARNING, logger="masgrid"):
        assert store.get("m", KEY) is None
        assert store.get("m", KEY) is None
    warnings = [r for r in caplog.records if "response cache" in r.getMessage()]
    assert len(warnings) == 1 and "damaged" in warnings[0].getMessage() and str(path) in warnings[0].getMessage()
    assert store.put("m", KEY, answer(1))
    replaced = store.get("m", KEY)
    assert replaced is not None and replaced.text == answer(1).text


def test_a_folder_in_place_of_an_entry_is_a_miss(tmp_path: Path, caplog) -> None:
    store = ResponseStore(tmp_path)
    store.path("m", KEY).mkdir(parents=True)
    with caplog.at_level(logging.WARNING, logger="masgrid"):
        assert store.get("m", KEY) is None
        assert not store.put("m", KEY, answer(1))  # cannot replace a folder: logged, not raised
    assert any("unreadable" in r.getMessage() for r in caplog.records)
    assert any("not writable" in r.getMessage() for r in caplog.records)


def test_an_unwritable_cache_dir_does_not_fail_the_call(tmp_path: Path, caplog) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with caplog.at_level(logging.WARNING, logger="masgrid"):
        assert not ResponseStore(blocker).put("m", KEY, answer(1))
    assert any("not writable" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("model", ["Qwen/Qwen3-8B", "..", ".hidden", "", "a b%2F", "gpt-4o@2024/../x"])
def test_model_folders_are_one_plain_component(model: str) -> None:
    folder = model_folder(model)
    assert "/" not in folder and not folder.startswith(".") and folder
    assert folder_model(folder) == model


def _writer(root: str, worker: int, rounds: int) -> None:
    store = ResponseStore(Path(root))
    for r in range(rounds):
        for k in range(4):
            store.put("m", f"{k:02d}" + "f" * 62, answer(1000 * worker + r))


def _reader(root: str, rounds: int, out: multiprocessing.Queue) -> None:
    store = ResponseStore(Path(root))
    seen, damaged = 0, 0
    for _ in range(rounds):
        for k in range(4):
            path = store.path("m", f"{k:02d}" + "f" * 62)
            try:
                raw = path.read_bytes()
            except FileNotFoundError:
                continue
            try:
                json.loads(raw)
                seen += 1
            except ValueError:
                damaged += 1
    out.put((seen, damaged))


def test_concurrent_writers_leave_whole_entries(tmp_path: Path) -> None:
    """Four processes rewrite the same four keys while a fifth reads the files raw: every read
    is a whole JSON entry, every final entry is one writer's answer, no temp file is left."""
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    writers = [ctx.Process(target=_writer, args=(str(tmp_path), w, 60)) for w in range(4)]
    reader = ctx.Process(target=_reader, args=(str(tmp_path), 400, out))
    for p in [*writers, reader]:
        p.start()
    for p in [*writers, reader]:
        p.join(60)
        assert p.exitcode == 0
    seen, damaged = out.get(timeout=10)
    assert damaged == 0 and seen > 0
    store = ResponseStore(tmp_path)
    written = {answer(1000 * w + r).text for w in range(4) for r in range(60)}
    for k in range(4):
        got = store.get("m", f"{k:02d}" + "f" * 62)
        assert got is not None and got.text in written
    assert not [p for p in tmp_path.rglob(".*")], "temp files left behind"
    assert len(list(tmp_path.rglob("*.json"))) == 4
    assert os.listdir(tmp_path) == ["m"]


def test_entries_get_the_mode_an_ordinary_file_gets(tmp_path: Path) -> None:
    """Others sharing the cache (a group directory on shared storage) read entries as they
    would any file this process writes, not only its owner (mkstemp's 0600)."""
    store = ResponseStore(tmp_path)
    assert store.put("m", KEY, answer(1))
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert store.path("m", KEY).stat().st_mode & 0o777 == plain.stat().st_mode & 0o777
