"""docs/results.md documents exactly the schema in masgrid/_private/platform/results/table_schemas.py."""

from __future__ import annotations

from pathlib import Path

from masgrid._private.platform.results import schema_doc
from masgrid._private.platform.results.table_schemas import (AGENT_COLUMNS, AGENTS_SCHEMA, EVENT_COLUMNS, EVENT_KINDS,
                                                     EVENTS_SCHEMA, runs_schema)

DOC = Path(__file__).resolve().parents[3] / "docs" / "results.md"


def test_results_doc_is_generated_from_the_schema():
    doc = DOC.read_text(encoding="utf-8")
    assert schema_doc.render(doc) == doc, "run `python -m masgrid._private.platform.results.schema_doc` to update docs/results.md"


def test_every_metric_column_has_meaning_and_unit_in_the_doc():
    doc = DOC.read_text(encoding="utf-8")
    for name, metric in schema_doc.documented_metrics().items():
        assert name in runs_schema().names
        row = next(line for line in doc.splitlines() if line.startswith(f"| `{name}` |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == metric.type and cells[2] == metric.unit, name
        assert metric.unit not in ("", "-", "see meaning"), name  # a real unit
        assert cells[3] == metric.meaning and metric.meaning


def _doc_row(doc: str, section: str, name: str) -> list[str]:
    block = doc.split(f"### {section}", 1)[1].split("\n### ", 1)[0]
    row = next(line for line in block.splitlines() if line.startswith(f"| `{name}` |"))
    return [c.strip() for c in row.strip("|").split("|")]


def test_every_agents_and_events_column_and_event_kind_has_meaning_and_unit_in_the_doc():
    doc = DOC.read_text(encoding="utf-8")
    for section, columns, schema in (("`agents` columns", AGENT_COLUMNS, AGENTS_SCHEMA),
                                     ("`events` columns", EVENT_COLUMNS, EVENTS_SCHEMA)):
        assert list(columns) == schema.names
        for name, column in columns.items():
            cells = _doc_row(doc, section, name)
            assert cells[2] == column.unit and column.unit and cells[3] == column.meaning and column.meaning, name
    for kind, meaning in EVENT_KINDS.items():
        assert _doc_row(doc, "`events` kinds", kind)[1] == meaning and meaning


def test_every_column_of_the_three_tables_is_declared_as_a_metric_with_unit_and_meaning():
    """One scheme for every column: the runs table's configuration and status columns, the
    families' top-level options and every agents and events column are `Metric`s, and the
    runs schema is exactly what they declare."""
    from masgrid._private.platform.results.table_schemas import (CONFIG_COLUMNS, FAMILY_SETTING_COLUMNS,
                                                                 RUN_STATUS_COLUMNS, runs_columns)
    from masgrid.family import Metric

    doc = DOC.read_text(encoding="utf-8")
    for name, column in {**CONFIG_COLUMNS, **RUN_STATUS_COLUMNS}.items():
        cells = _doc_row(doc, "`runs`: configuration and status columns", name)
        assert cells[2] == column.unit and cells[3] == column.meaning and column.meaning, name
    for table in (runs_columns(), AGENT_COLUMNS, EVENT_COLUMNS, FAMILY_SETTING_COLUMNS):
        assert all(isinstance(column, Metric) and column.unit and column.meaning for column in table.values())
    assert list(runs_columns()) == runs_schema().names
    assert [runs_columns()[name].arrow_type() for name in runs_schema().names] == list(runs_schema().types)
