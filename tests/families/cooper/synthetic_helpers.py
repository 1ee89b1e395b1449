"""Shared set-up for the CooperBench data tests: the synthetic pool and a sandbox."""

from __future__ import annotations

from pathlib import Path

from masgrid.families.cooper.layout import CooperTaskData, load_task
from masgrid.families.cooper.sandbox import Sandbox, SandboxSettings
from masgrid.families.cooper.synthetic import SyntheticPool, write_synthetic_pool


def build_pool(root: Path) -> tuple[SyntheticPool, CooperTaskData]:
    pool = write_synthetic_pool(root)
    return pool, load_task(pool.data_dir, pool.pool, pool.task_id)


def eval_sandbox(kind: str = "bwrap") -> Sandbox:
    return Sandbox(SandboxSettings(kind=kind, timeout_s=120), writable=[])
