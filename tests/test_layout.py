"""Core code names no benchmark family: a family's name, label, task names and protocols appear
in code (identifiers and string literals) only under masgrid/families/<family>/. Comments and
docstrings may cite a family's paper (the shared protocols come from MAS-Bench's appendices)."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from masgrid.family import families

PACKAGE = Path(__file__).resolve().parents[1] / "masgrid"


def _family_words() -> re.Pattern[str]:
    words: set[str] = set()
    for family in families().values():
        if family.folder is None or PACKAGE not in family.folder.parents:
            continue  # a family installed from elsewhere (tests/plugins) is not masgrid's concern here
        words |= {family.name, family.label, *family.task_names, *(p.rstrip("/") for p in family.task_prefixes),
                  *family.protocols, *family.schedules, *family.cli}
    words |= {"mas-bench", "silo-bench", "cooperbench", "camoc"}
    alternatives = "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))
    return re.compile(rf"(?i)(?<![a-z0-9_]){alternatives}(?![a-z0-9_])")


#: family words that are ordinary words in code (`max(...)`, a local path, a validity judgement)
ORDINARY = {"max", "local", "judge"}
#: where core code names a family on purpose, with why
ALLOWED: dict[tuple[str, str], str] = {}


def _code_tokens(path: Path) -> list[tuple[int, str]]:
    out = []
    previous = tokenize.NEWLINE
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type == tokenize.NAME:
            out.append((token.start[0], token.string))
        elif token.type == tokenize.STRING and previous not in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                                                 tokenize.NL):
            out.append((token.start[0], token.string))  # a string that is not a docstring
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            previous = token.type
    return out


def _core_tokens() -> Iterator[tuple[Path, int, str]]:
    """(path from the repository root, line, token) of every name and non-docstring string in core code."""
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent)
        if rel.parts[1] != "families":
            for line, text in _code_tokens(path):
                yield rel, line, text


def test_core_code_names_no_family():
    pattern = _family_words()
    found = []
    for rel, line, text in _core_tokens():
        for match in pattern.finditer(text):
            word = match.group(0).lower()
            if word in ORDINARY or (str(rel), word) in ALLOWED:
                continue
            found.append(f"{rel}:{line}: {word!r} in {text[:60]!r}")
    assert not found, "core code names a family (move it under masgrid/families/<family>/):\n" + "\n".join(found)


SITE_ASSETS = PACKAGE / "_private" / "site" / "assets"


def test_the_sites_core_scripts_name_no_family():
    """The report site's own JavaScript, CSS and HTML (each family's panel script lives in its
    folder) say nothing about a particular family: labels and headlines come from the data."""
    pattern = _family_words()
    found = [f"{path.name}:{n}: {m.group(0)!r}" for path in sorted(SITE_ASSETS.rglob("*")) if path.is_file()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             for m in pattern.finditer(line) if m.group(0).lower() not in ORDINARY]
    assert not found, "\n".join(found)


#: a family's own notions: its declared metric columns; core code reads them only through the
#: registry (Family.metrics), never by name
def _family_metric_names() -> set[str]:
    """Each built-in family's columns: its metrics and its top-level options (MAS-Bench's mode)."""
    return {name for family in families().values() if family.folder is not None and PACKAGE in family.folder.parents
            for name in [*family.metrics, *family.top_level]} - ORDINARY_METRIC_WORDS


#: family columns whose names are also ordinary words of core code, with where and why
ORDINARY_METRIC_WORDS = {
    "diameter",  # the topology module's graph measure (topology_diameter is the core column)
    "edges",  # a graph's edge list in the topology and records modules
    "invalid_answers",  # a key of `masgrid score`'s JSON output, not the runs column
}


def test_core_code_uses_no_familys_metric_by_name():
    names = _family_metric_names()
    assert {"te", "cr", "rho", "mode", "graph"} <= names  # MAS-Bench's equations 6, 7, 3; its and AgentsNet's options
    found = []
    for rel, line, text in _core_tokens():
        word = text[1:-1] if text[:1] in "\"'" and text[-1:] == text[:1] else None
        if word in names or re.fullmatch(r"[a-z_]+\.(te|cr|rho)", text):
            found.append(f"{rel}:{line}: {text[:60]!r}")
    assert not found, "core code names a family's metric (declare and read it through Family.metrics):\n" + \
        "\n".join(found)


#: a comparison of a schedule's name with a literal
SCHEDULE_NAME_TEST = re.compile(r"schedule\s*(==|!=|\bin\b)\s*[\"'(\[{]")


def test_core_code_asks_a_schedule_what_it_needs_instead_of_testing_its_name():
    """`Scheduler.steps_agents`, `counts_message_tokens`, `routes_messages`, `placement` and
    `packs_in_driver` say what a schedule needs; comparing a schedule's name hides that."""
    found = [f"{path.relative_to(PACKAGE.parent)}:{n}" for path in sorted(PACKAGE.rglob("*.py"))
             if path.relative_to(PACKAGE).parts[0] != "families"
             for n, line in enumerate(path.read_text().splitlines(), start=1)
             if SCHEDULE_NAME_TEST.search(line)]
    assert not found, found


def test_the_schedule_check_catches_a_name_test():
    caught = ['timed=task.schedule == "asynchronous"', "if schedule != 'sequential':",
              'if task.schedule in ("a", "b"):']
    passed = ["timed=scheduler_class(task.schedule).steps_agents", "schedule = get_scheduler(name)"]
    assert all(SCHEDULE_NAME_TEST.search(line) for line in caught)
    assert not any(SCHEDULE_NAME_TEST.search(line) for line in passed)


def test_the_check_catches_a_family_name(tmp_path):
    """The check itself: a core module naming a family's task is found."""
    probe = tmp_path / "probe.py"
    probe.write_text('"""SIMAS in a docstring is fine."""\nTASK = "simas/mmlu"  # and in a comment\n')
    hits = [text for _, text in _code_tokens(probe) if _family_words().search(text)]
    assert hits == ['"simas/mmlu"']


def test_every_builtin_family_is_one_folder():
    for family in families().values():
        if family.folder is not None and PACKAGE in family.folder.parents:
            assert family.folder == PACKAGE / "families" / family.name
            assert family.tasks.startswith(f"masgrid.families.{family.name}.")


def test_a_family_outside_masgrid_needs_only_the_public_modules():
    """The worked example of a third-party family imports masgrid, masgrid.task_api,
    masgrid.family and masgrid.sdk only: nothing under masgrid._private, whose names may change."""
    plugin = PACKAGE.parent / "tests" / "plugins" / "masgrid_relay"
    imported = set()
    for path in plugin.rglob("*.py"):
        if "build" in path.parts:
            continue
        for line in path.read_text().splitlines():
            words = line.split()
            if words[:1] == ["import"] or (words[:1] == ["from"] and "import" in words):
                imported.add(words[1])
    masgrid_modules = {name for name in imported if name.split(".")[0] == "masgrid"}
    public = {"masgrid", "masgrid.task_api", "masgrid.family", "masgrid.sdk"}
    assert masgrid_modules and all(name in public or name.startswith("masgrid.sdk.") for name in masgrid_modules), \
        masgrid_modules


def imported_modules(path: Path) -> set[str]:
    """Every module a Python file imports (absolute imports, at any depth: function-local too)."""
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names if alias.name.startswith("_"))
    return found


def cross_family_imports(families_dir: Path) -> list[str]:
    """`path: module` for each import of one family's modules from another family's folder."""
    names = {d.name for d in families_dir.iterdir() if d.is_dir() and (d / "__init__.py").exists()}
    out = []
    for name in sorted(names):
        for path in sorted((families_dir / name).rglob("*.py")):
            for module in sorted(imported_modules(path)):
                parts = module.split(".")
                if parts[:2] == ["masgrid", "families"] and len(parts) > 2 and parts[2] in names - {name}:
                    out.append(f"{path.relative_to(families_dir)}: {module}")
    return out


def test_no_family_imports_another_family():
    """What several families share (figures, intervals, information replay, a judge's model)
    lives in masgrid.sdk, so no family depends on another's internals."""
    assert cross_family_imports(PACKAGE / "families") == []


def private_imports(families_dir: Path) -> list[str]:
    """`path: module` for each import of masgrid's private modules from under the families folder."""
    out = []
    for path in sorted(families_dir.rglob("*.py")):
        for module in sorted(imported_modules(path)):
            if module.split(".")[:2] == ["masgrid", "_private"]:
                out.append(f"{path.relative_to(families_dir)}: {module}")
    return out


def test_no_family_imports_masgrids_private_modules():
    """Masgrid's own families build on masgrid.sdk (and masgrid.family) only, so a family
    written outside masgrid can do everything they do without importing private names."""
    assert private_imports(PACKAGE / "families") == []


def test_the_private_import_check_catches_an_import(tmp_path):
    (tmp_path / "alpha").mkdir()
    (tmp_path / "alpha" / "a.py").write_text("def f():\n    from masgrid._private.resources import read_text\n")
    (tmp_path / "alpha" / "b.py").write_text("from masgrid import _private\nimport masgrid.sdk.results\n")
    (tmp_path / "alpha" / "c.py").write_text("import masgrid._private.envs.tasks  # noqa: F401\n")
    assert private_imports(tmp_path) == ["alpha/a.py: masgrid._private.resources", "alpha/b.py: masgrid._private",
                                         "alpha/c.py: masgrid._private.envs.tasks"]


def test_the_cross_family_check_catches_an_import(tmp_path):
    for name in ("alpha", "beta"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "beta" / "plots.py").write_text("def f():\n    from masgrid.families.alpha.figures import g\n")
    (tmp_path / "alpha" / "own.py").write_text("from masgrid.families.alpha import figures\nimport masgrid.sdk\n")
    assert cross_family_imports(tmp_path) == ["beta/plots.py: masgrid.families.alpha.figures"]


#: the longest a core function may be: longer ones hide several jobs (issue 34)
MAX_FUNCTION_LINES = 80


def long_functions(root: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """`path:line name (n lines)` for each function or method under `root` longer than `limit`."""
    import ast

    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > limit:
                    out.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_core_function_is_over_80_lines():
    core = [hit for hit in long_functions(PACKAGE) if not hit.startswith("families/")]
    assert core == [], core


def test_the_length_check_counts_a_long_function(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(80))
    (tmp_path / "m.py").write_text(f"def short():\n    pass\n\n\nasync def long():\n{body}")
    assert long_functions(tmp_path) == ["m.py:5 long (81 lines)"]


#: which of the platform's sub-packages each may import (docs/architecture.md): a single run
#: knows nothing of sweeps or the command line; the command line sits on top of everything
PLATFORM_IMPORTS = {
    "run": {"results", "cluster"},
    "results": set(),
    "cluster": {"results"},
    "judging": set(),
    "sweeps": {"run", "results", "cluster"},
    "commands": {"run", "results", "cluster", "sweeps", "judging"},
}


def platform_edges(platform_dir: Path) -> list[str]:
    """`path: module` for each import of one platform sub-package by another that may not import it."""
    out = []
    for path in sorted(platform_dir.rglob("*.py")):
        parts = path.relative_to(platform_dir).parts
        if len(parts) < 2:
            continue
        allowed = PLATFORM_IMPORTS.get(parts[0], set()) | {parts[0]}
        for module in sorted(imported_modules(path)):
            names = module.split(".")
            if names[:3] == ["masgrid", "_private", "platform"] and len(names) > 3 and names[3] not in allowed:
                out.append(f"{path.relative_to(platform_dir)}: {module}")
    return out


def test_the_platforms_sub_packages_import_one_way():
    platform = PACKAGE / "_private" / "platform"
    assert {d.name for d in platform.iterdir() if (d / "__init__.py").exists()} == set(PLATFORM_IMPORTS)
    assert platform_edges(platform) == []


def test_the_platform_import_check_catches_an_upward_import(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "driver.py").write_text(
        "from masgrid._private.platform.results.recorder import Recorder\n"
        "def f():\n    from masgrid._private.platform.sweeps.sweep import run_sweep\n")
    assert platform_edges(tmp_path) == ["run/driver.py: masgrid._private.platform.sweeps.sweep"]


#: RunConfig's own fields: the mission's vocabulary (N agents, K data per agent, model, protocol,
#: condition, seed, schedule through the task, topology, channel, team) and how a run executes;
#: everything a family means by its own words lives in its option block
CORE_CONFIG_FIELDS = {"task", "protocol", "agents", "k", "condition", "backend", "model", "seed", "results_dir",
                      "max_rounds", "topology", "execution", "experiment", "tags", "validity", "preflight", "team",
                      "channel"}


def test_run_configs_own_fields_are_the_missions_vocabulary():
    from masgrid._private.platform.run.config import _RunConfigBase

    assert set(_RunConfigBase.model_fields) == CORE_CONFIG_FIELDS


def test_the_sites_core_scripts_use_no_familys_column_by_name():
    """The site's core script reads a family's columns from the data it is given (the metrics
    list, the setting, `score`), never by a quoted or dotted name of its own."""
    names = _family_metric_names()
    pattern = re.compile(r"""["'.](%s)(?![A-Za-z0-9_])""" % "|".join(sorted(map(re.escape, names), key=len, reverse=True)))
    found = [f"{path.name}:{n}: {m.group(0)!r}" for path in sorted(SITE_ASSETS.rglob("*")) if path.is_file()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             for m in pattern.finditer(line)]
    assert not found, "\n".join(found)
    assert pattern.search('row["soft_score"]') and pattern.search("run.graph;") and not pattern.search("graphs")
