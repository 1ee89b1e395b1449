"""A synthetic CooperBench pool written by us: `textkit`, a tiny text-helper library.

Built with real git in the release's layout (`<data_dir>/textkit_task/task1/...` and a clone
at `<repos_dir>/textkit`), so every merge path of the evaluator can be exercised without the
network or a model. Five features, each with a gold patch and its own test file:

1. slugify drops punctuation (adds `import re`, rewrites slugify's first body line)
2. slugify takes a separator (rewrites slugify's signature and return line)
3. truncate marks cut text with "..." (rewrites truncate's last line)
4. char_count (a new function appended at the end of core.py)
5. initials (another new function appended at the end of core.py)

Designed outcomes of the gold pairs (`SyntheticPool.expected`):

* 1,2 - "union_breaks": both rewrite adjacent lines of slugify, so the naive merge
  conflicts; union keeps both versions of the function, the later definition wins and one
  feature's test fails (which one depends on the merge order).
* 4,5 - "union": both append at the end of the file; the naive merge conflicts, union keeps
  both functions and every test passes.
* every other pair - "clean": the changes are separated by unchanged lines.
"""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

from pydantic import BaseModel, Field

from masgrid.families.cooper.gitops import git
from masgrid.families.cooper.layout import CooperDataError

POOL = "textkit_task"
TASK_ID = 1
REPO = "masgrid/textkit"

_CORE = '''"""textkit: small text helpers (a synthetic library for masgrid's CooperBench tests)."""


def slugify(text):
    words = text.lower().split()
    return "-".join(words)


def truncate(text, width):
    if len(text) <= width:
        return text
    return text[:width]


def word_count(text):
    return len(text.split())
'''

_BASE_TESTS = '''from textkit.core import slugify, truncate, word_count


def test_slugify_joins_lowercase_words():
    assert slugify("Hello World") == "hello-world"


def test_truncate_keeps_short_text():
    assert truncate("abc", 5) == "abc"


def test_word_count():
    assert word_count("a b  c") == 3
'''

#: feature id -> (title, description, [(old, new) edits of core.py], test file name, test text)
_FEATURES: dict[int, tuple[str, str, list[tuple[str, str]], str, str]] = {
    1: ("Slugs without punctuation",
        "`slugify` should remove every character that is neither a word character nor whitespace "
        "before joining, so `slugify(\"Hello, World!\")` gives `hello-world`.",
        [('"""\n\n\ndef slugify', '"""\nimport re\n\n\ndef slugify'),
         ("    words = text.lower().split()\n    return \"-\"",
          "    words = re.sub(r\"[^\\w\\s]\", \"\", text).lower().split()\n    return \"-\"")],
        "test_punctuation.py",
        'from textkit.core import slugify\n\n\ndef test_punctuation_is_dropped():\n'
        '    assert slugify("Hello, World!") == "hello-world"\n'),
    2: ("Custom slug separator",
        "`slugify` takes an optional `sep` argument (default `-`) placed between the words.",
        [("def slugify(text):\n    words = text.lower().split()\n    return \"-\".join(words)",
          "def slugify(text, sep=\"-\"):\n    words = text.lower().split()\n    return sep.join(words)")],
        "test_separator.py",
        'from textkit.core import slugify\n\n\ndef test_separator():\n'
        '    assert slugify("a b", sep="_") == "a_b"\n    assert slugify("a b") == "a-b"\n'),
    3: ("Ellipsis on truncation",
        "When `truncate` shortens text it ends the result with `...`, keeping the total length "
        "within `width`.",
        [("    return text[:width]\n", "    return text[: max(width - 3, 0)] + \"...\"\n")],
        "test_ellipsis.py",
        'from textkit.core import truncate\n\n\ndef test_ellipsis():\n'
        '    assert truncate("abcdefgh", 6) == "abc..."\n    assert truncate("abc", 5) == "abc"\n'),
    4: ("Character count",
        "Add `char_count(text, spaces=True)`: the number of characters, leaving out spaces when "
        "`spaces` is false.",
        [("    return len(text.split())\n",
          "    return len(text.split())\n\n\ndef char_count(text, spaces=True):\n"
          "    return len(text) if spaces else len(text.replace(\" \", \"\"))\n")],
        "test_char_count.py",
        'from textkit.core import char_count\n\n\ndef test_char_count():\n'
        '    assert char_count("a b") == 3\n    assert char_count("a b", spaces=False) == 2\n'),
    5: ("Initials",
        "Add `initials(text)`: the upper-cased first letter of every word.",
        [("    return len(text.split())\n",
          "    return len(text.split())\n\n\ndef initials(text):\n"
          "    return \"\".join(word[0].upper() for word in text.split())\n")],
        "test_initials.py",
        'from textkit.core import initials\n\n\ndef test_initials():\n'
        '    assert initials("grace brewster hopper") == "GBH"\n'),
}

#: designed outcome per gold pair (every pair not named is "clean")
_SPECIAL = {"1,2": "union_breaks", "4,5": "union"}

_SETUP = """#!/bin/bash
# Synthetic pool written for masgrid (issue 16): the textkit library at its base commit.
REPO_NAME="textkit"
BASE_COMMIT="{base}"
git clone https://example.invalid/masgrid/textkit "$REPO_NAME"
cd "$REPO_NAME" && git checkout "$BASE_COMMIT"
"""

_RUN_TESTS = """#!/bin/bash
# Test command of the synthetic textkit pool; masgrid's evaluator uses only the pytest line.
set -e
echo "RUNNING_TESTS..."
python -m pytest tests -v 2>&1
"""


class SyntheticPool(BaseModel):
    """Where the synthetic pool was written and what its gold pairs should give."""

    data_dir: Path
    repos_dir: Path
    pool: str = POOL
    task_id: int = TASK_ID
    features: list[int]
    base_commit: str
    expected: dict[str, str] = Field(description='"i,j" -> "clean" | "union" | "union_breaks"')


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _diff_of(repo: Path, base: str, files: dict[str, str]) -> str:
    """The diff that turns the base into the base plus `files`, made by git itself."""
    git(repo, "checkout", "--quiet", "--force", "--detach", base)
    for name, text in files.items():
        _write(repo / name, text)
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached", base).stdout
    git(repo, "reset", "--quiet", "--hard", base)
    git(repo, "clean", "-qfd")
    return patch


def _edited(text: str, edits: list[tuple[str, str]]) -> str:
    for old, new in edits:
        if text.count(old) != 1:
            raise AssertionError(f"synthetic edit anchor not unique: {old!r}")
        text = text.replace(old, new)
    return text


def write_synthetic_pool(root: Path) -> SyntheticPool:
    """Write the pool under `root` (data/ and repos/) and return where it is and what to expect."""
    root = Path(root)
    data_dir, repos_dir = root / "data", root / "repos"
    repo = repos_dir / "textkit"
    if repo.exists() or (data_dir / POOL).exists():
        raise CooperDataError(f"{repo} or {data_dir / POOL} already exists: write the pool into a fresh directory")
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", "-b", "main", str(repo)], check=True, capture_output=True)
    _write(repo / "textkit" / "__init__.py", '"""textkit: small text helpers."""\n')
    _write(repo / "textkit" / "core.py", _CORE)
    _write(repo / "tests" / "test_base.py", _BASE_TESTS)
    _write(repo / ".gitignore", "__pycache__/\n.pytest_cache/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "textkit base")
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    task = data_dir / POOL / f"task{TASK_ID}"
    _write(task / "setup.sh", _SETUP.format(base=base))
    _write(task / "run_tests.sh", _RUN_TESTS)
    for fid, (title, text, edits, test_name, test_text) in _FEATURES.items():
        feature = task / f"feature{fid}"
        _write(feature / "feature.md", f"# {title}\n\n{text}\n")
        _write(feature / "feature.patch", _diff_of(repo, base, {"textkit/core.py": _edited(_CORE, edits)}))
        _write(feature / "tests.patch", _diff_of(repo, base, {f"tests/{test_name}": test_text}))
    git(repo, "checkout", "--quiet", "main")
    expected = {f"{i},{j}": _SPECIAL.get(f"{i},{j}", "clean") for i, j in itertools.combinations(_FEATURES, 2)}
    return SyntheticPool(data_dir=data_dir, repos_dir=repos_dir, features=list(_FEATURES), base_commit=base,
                         expected=expected)
