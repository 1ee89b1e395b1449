"""masgrid._private.analysis reads Parquet only: it never imports masgrid._private.platform or masgrid._private.actors."""

from __future__ import annotations

import ast
from pathlib import Path

import masgrid._private.analysis

FORBIDDEN = ("masgrid._private.platform", "masgrid._private.actors")


def test_analysis_imports_neither_platform_nor_actors():
    root = Path(masgrid._private.analysis.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.name}: {n}" for n in names if n.startswith(FORBIDDEN)]
    assert not offenders
    assert len(list(root.rglob("*.py"))) >= 6  # the walk saw the modules
