"""The files behind `model.cache`: one JSON file per answered request.

Layout: `<cache_dir>/<model>/<key[:2]>/<key>.json`, the model as its URL-quoted request name.
Every entry is written to a dot-named temp file in its final folder and renamed over the
entry, so readers (other agent hosts, other nodes on shared storage) see a whole entry or
none, and two writers of one key leave one whole entry. A file that cannot be read back as
an entry (cut short, edited, another format) is a miss, logged once per file: the call then
goes to the model and its answer replaces the damaged file.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote, unquote

from pydantic import ValidationError

from masgrid._private.actors.backends.base import Completion

log = logging.getLogger(__name__)

#: the entry format; a file of another format is a miss (and is replaced when the call succeeds)
FORMAT = 1
ENV_DIR = "MASGRID_CACHE_DIR"
#: what a hit restores of the original call (the rest is the caller's: attempts, started_at)
STORED_FIELDS = ("text", "tool_calls", "tokens_in", "tokens_out", "tokens_cached", "usage_source",
                 "finish_reason", "latency_s")
#: mkstemp makes files private (0600); entries get the mode open() gives under this process's umask
_UMASK = os.umask(0o022)
os.umask(_UMASK)
_FILE_MODE = 0o666 & ~_UMASK
#: files warned about in this process (a damaged entry is reported once, not on every call)
_warned: set[str] = set()


def cache_root(cache_dir: str | None) -> Path:
    """`model.cache_dir`, else $MASGRID_CACHE_DIR, else ~/.cache/masgrid/model-calls."""
    chosen = cache_dir or os.environ.get(ENV_DIR)
    return Path(chosen).expanduser() if chosen else Path.home() / ".cache" / "masgrid" / "model-calls"


def model_folder(model: str) -> str:
    """A model's folder name: its request name quoted so that it is one path component and
    names no hidden or parent folder ("Qwen/Qwen3-8B" -> "Qwen%2FQwen3-8B")."""
    name = quote(model, safe="")
    return "%2E" + name[1:] if name.startswith(".") else name or "%00"


def folder_model(folder: str) -> str:
    """The model name a folder holds (model_folder reversed)."""
    return "" if folder == "%00" else unquote(folder)


def _warn_once(path: Path, why: str) -> None:
    if str(path) not in _warned:
        _warned.add(str(path))
        log.warning("response cache: %s: %s; treated as a miss", path, why)


class ResponseStore:
    """Entries under one cache directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, model: str, key: str) -> Path:
        return self.root / model_folder(model) / key[:2] / f"{key}.json"

    def get(self, model: str, key: str) -> Completion | None:
        """The stored answer for `key`, or None: no entry, or one that does not read back."""
        path = self.path(model, key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            _warn_once(path, f"unreadable ({exc.strerror or exc})")
            return None
        try:
            entry = json.loads(raw)
            if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
                raise ValueError("not an entry of this key in format 1")
            stored = entry["completion"]
            if not isinstance(stored, dict) or set(stored) - set(STORED_FIELDS):
                raise ValueError("its completion holds unknown fields")
            return Completion.model_validate({**stored, "from_cache": True, "attempts": 0})
        except (ValueError, KeyError, ValidationError) as exc:  # JSONDecodeError is a ValueError
            _warn_once(path, f"damaged ({(str(exc).splitlines() or [type(exc).__name__])[0]})")
            return None

    def put(self, model: str, key: str, completion: Completion) -> bool:
        """Store a successful answer; False (logged once per folder) when it cannot be written,
        e.g. a read-only or full disk: the run goes on, only without this entry."""
        if completion.error is not None:
            raise ValueError("only successful calls are stored")
        path = self.path(model, key)
        entry = {"format": FORMAT, "key": key, "model": model, "stored_at": time.time(),
                 "completion": completion.model_dump(mode="json", include=set(STORED_FIELDS))}
        data = json.dumps(entry, separators=(",", ":")).encode()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=path.parent)
            try:
                os.fchmod(fd, _FILE_MODE)  # as open() would make it: others on shared storage may read it
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                os.replace(temp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        except OSError as exc:
            _warn_once(path.parent, f"not writable ({exc.strerror or exc}); answers are not stored")
            return False
        return True


class StoredEntry(NamedTuple):
    model: str
    path: Path
    size: int
    mtime: float


def scan(root: Path, model: str | None = None) -> Iterator[StoredEntry]:
    """Every entry under `root` (or under one model's folder), as the layout names them; temp
    files and anything else found there are left out."""
    folders = [root / model_folder(model)] if model is not None else sorted(p for p in root.iterdir() if p.is_dir())
    for folder in folders:
        if not folder.is_dir() or folder.name.startswith("."):
            continue
        name = folder_model(folder.name)
        for bucket in sorted(folder.iterdir()):
            if len(bucket.name) != 2 or not bucket.is_dir():
                continue
            with os.scandir(bucket) as found:
                for item in found:
                    if item.name.startswith(bucket.name) and item.name.endswith(".json") and item.is_file():
                        stat = item.stat()
                        yield StoredEntry(name, Path(item.path), stat.st_size, stat.st_mtime)


def stale_temps(root: Path, older_than_s: float) -> Iterator[Path]:
    """Temp files a writer that died left behind (older than any write takes)."""
    cutoff = time.time() - older_than_s
    for path in root.glob("*/??/.*.tmp"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                yield path
