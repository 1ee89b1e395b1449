"""The task pages state the answer format and tolerance the agent is told (formats_doc)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from masgrid.families.silo import formats_doc, prompts
from masgrid.families.silo.catalog import SILO_SPECS  # every level registered

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("level", [1, 2, 3])
def test_task_pages_carry_the_current_answer_formats(level: int) -> None:
    page = (ROOT / formats_doc.PAGES[level]).read_text(encoding="utf-8")
    assert formats_doc.render(level) in page, "stale: run python -m masgrid.families.silo.formats_doc"
    for task_id, cls in SILO_SPECS.items():
        if cls.level == level:
            first_line = prompts.task_text(task_id)["answer_format"].strip().splitlines()[0]
            assert first_line.replace("|", "\\|") in page, task_id


@pytest.mark.parametrize("task_id", sorted(SILO_SPECS))
def test_the_tolerance_the_agent_is_told_is_the_scorers(task_id: str) -> None:
    """A task with a tolerance says "within <tol>" in every answer format it shows; an exact
    task never promises one."""
    spec = SILO_SPECS[task_id]()
    text = prompts.task_text(task_id)
    for field in ("answer_format", "oracle_answer_format"):
        if field not in text:
            continue
        told = re.findall(r"within (\d+(?:\.\d+)?)", text[field])
        assert [float(t) for t in told] == ([spec.tolerance] if spec.tolerance else []), (task_id, field)


def test_updated_inserts_or_replaces_the_block() -> None:
    fresh = formats_doc.updated("# page\n", 1)
    assert fresh.count(formats_doc.BEGIN) == 1 and fresh.endswith(formats_doc.END + "\n")
    stale = fresh.replace("I-07", "I-99")
    assert formats_doc.updated(stale, 1) == fresh
