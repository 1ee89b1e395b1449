"""`masgrid cache list|size|prune`: what model.cache holds, and removing some of it.

The cache only grows (one file per answered request, docs/hosted-apis.md); this is how a
researcher sees what it costs on disk and drops what a study no longer needs. An entry's
age is the time it was stored (its file's modification time).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from masgrid._private.actors.backends.response_store import StoredEntry, cache_root, scan, stale_temps

#: a temp file older than this is a dead writer's (a write takes milliseconds)
STALE_TEMP_S = 3600.0
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_age(text: str) -> float:
    """'30d', '12h', '90m', '45s', '2w' as seconds; ValueError in one line otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text.lower())
    if not match:
        raise ValueError(f"--older-than {text!r}: give a number and a unit, s m h d or w (e.g. 30d)")
    return float(match[1]) * _AGE_UNITS[match[2]]


def parse_size(text: str) -> int:
    """'500M', '2G', '10k', '123' (bytes; K, M, G, T are powers of 1024) as bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text.lower())
    if not match:
        raise ValueError(f"--max-size {text!r}: give bytes, or a number with K, M, G or T (e.g. 500M)")
    return int(float(match[1]) * _SIZE_UNITS[match[2]])


def human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _when(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def summary(entries: list[StoredEntry]) -> list[dict[str, Any]]:
    """Per model: entries, bytes, oldest and newest entry (epoch seconds)."""
    per: dict[str, dict[str, Any]] = {}
    for e in entries:
        row = per.setdefault(e.model, {"model": e.model, "entries": 0, "bytes": 0, "oldest": e.mtime,
                                       "newest": e.mtime})
        row["entries"] += 1
        row["bytes"] += e.size
        row["oldest"], row["newest"] = min(row["oldest"], e.mtime), max(row["newest"], e.mtime)
    return [per[m] for m in sorted(per)]


def to_remove(entries: list[StoredEntry], older_than_s: float | None, max_size: int | None,
              everything: bool, now: float) -> list[StoredEntry]:
    """The entries a prune removes: all, those older than the age, then the oldest of the rest
    until what is left fits `max_size` bytes."""
    if everything:
        return list(entries)
    gone = [e for e in entries if older_than_s is not None and now - e.mtime > older_than_s]
    if max_size is not None:
        removed = {e.path for e in gone}
        kept = sorted((e for e in entries if e.path not in removed), key=lambda e: (e.mtime, str(e.path)))
        total = sum(e.size for e in kept)
        for e in kept:
            if total <= max_size:
                break
            gone.append(e)
            total -= e.size
    return gone


def cache_command(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="masgrid cache", description="the response cache of model.cache")
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--dir", help="the cache directory (default: $MASGRID_CACHE_DIR, else "
                                     "~/.cache/masgrid/model-calls)")
    sub = parser.add_subparsers(dest="what", required=True)
    listing = sub.add_parser("list", parents=[where], help="per model: entries, size, oldest and newest entry")
    listing.add_argument("--json", action="store_true", help="one JSON object per model")
    sub.add_parser("size", parents=[where], help="entries and bytes in all")
    prune = sub.add_parser("prune", parents=[where], help="remove entries")
    prune.add_argument("--older-than", help="entries stored longer ago than this (30d, 12h, 90m)")
    prune.add_argument("--max-size", help="then the oldest entries until the rest fits (500M, 2G)")
    prune.add_argument("--all", action="store_true", help="every entry (of --model, if given)")
    prune.add_argument("--model", help="only this model's entries (the model name requests send)")
    prune.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    ns = parser.parse_args(args)
    root = cache_root(ns.dir)
    if not root.is_dir():
        print(f"masgrid cache: no cache directory at {root}" + (" (not a directory)" if root.exists() else ""),
              file=sys.stderr)
        return 1
    try:
        if ns.what == "prune":
            return _prune(root, ns)
        entries = list(scan(root))
    except OSError as exc:
        print(f"masgrid cache: {exc.filename or root}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    rows = summary(entries)
    if ns.what == "size":
        print(f"{root}: {len(entries)} entries, {human(sum(e.size for e in entries))} "
              f"({sum(e.size for e in entries)} bytes), {len(rows)} models")
        return 0
    if ns.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    print(f"{root}: {len(entries)} entries")
    for row in rows:
        print(f"  {row['model']}: {row['entries']} entries, {human(row['bytes'])}, "
              f"oldest {_when(row['oldest'])}, newest {_when(row['newest'])}")
    return 0


def _prune(root: Path, ns: argparse.Namespace) -> int:
    if not (ns.all or ns.older_than or ns.max_size):
        print("masgrid cache prune: say what to remove: --older-than AGE, --max-size SIZE or --all", file=sys.stderr)
        return 2
    try:
        older = parse_age(ns.older_than) if ns.older_than else None
        limit = parse_size(ns.max_size) if ns.max_size else None
    except ValueError as exc:
        print(f"masgrid cache prune: {exc}", file=sys.stderr)
        return 2
    entries = list(scan(root, ns.model))
    if ns.model is not None and not entries:
        print(f"masgrid cache prune: no entries of model {ns.model!r} under {root}", file=sys.stderr)
        return 1
    gone = to_remove(entries, older, limit, ns.all, time.time())
    freed = sum(e.size for e in gone)
    if not ns.dry_run:
        for e in gone:
            try:
                os.unlink(e.path)
            except FileNotFoundError:  # another prune got there first
                freed -= e.size
        for path in stale_temps(root, STALE_TEMP_S):
            path.unlink(missing_ok=True)
    verb = "would remove" if ns.dry_run else "removed"
    print(f"{root}: {verb} {len(gone)} of {len(entries)} entries ({human(freed)}); "
          f"{len(entries) - len(gone)} left")
    return 0
