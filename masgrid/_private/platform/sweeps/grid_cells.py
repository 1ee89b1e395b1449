"""Grid cells: a grid point without its seed, the unit adaptive sweeps sample and sweep budgets
project spend by. Kept apart from adaptive.py so a budget needs no analysis import (pandas)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from masgrid._private.platform.run.config import RunConfig
from masgrid.family import top_level_name


def cell_key(cfg: RunConfig) -> str:
    data = cfg.identity()
    data.pop("seed", None)
    data.pop("prompt_hash", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in flat(item, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): json.dumps(value) if isinstance(value, (list, dict)) else value}


def cell_labels(flats: Mapping[Any, dict[str, Any]]) -> dict[Any, str]:
    """Each cell (its flattened config, seed removed) as the keys the grid varies, e.g. `agents=4 max_rounds=20`.
    A key only some cells have (a setting one model preset has and another lacks) is named
    where it is present."""
    varying = sorted({k for f in flats.values() for k, v in f.items()
                      if any(other.get(k) != v for other in flats.values())})
    return {ident: " ".join(f"{top_level_name(k)}={point[k]}" for k in varying if k in point) or "(the only cell)"
            for ident, point in flats.items()}


def labels(runs: Mapping[str, RunConfig]) -> dict[str, str]:
    """cell key -> its label, from one run of each cell."""
    flats = {}
    for cell, cfg in runs.items():
        point = flat(cfg.model_dump(mode="json"))
        point.pop("seed", None)
        flats[cell] = point
    return cell_labels(flats)
