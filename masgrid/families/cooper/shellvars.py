"""Just enough reading of the release's shell scripts to find values set in them.

The scripts name test files and clone URLs through variables (`TEST_PATH="..."`,
`git clone https://github.com/${REPO_OWNER}/${REPO_NAME}`, `read -ra FILES <<< "$SPEC"`).
We take the *unconditional defaults* only: assignments at the start of a line with no
indentation (an indented assignment sits inside an `if`/`case` and depends on arguments we
never pass). Nothing is executed. An expansion we cannot resolve stays as `$NAME`, and the
caller refuses it with one line rather than guessing.
"""

from __future__ import annotations

import re
import shlex

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|[^\s#;]*)(?:\s*(?:#.*)?)?$")
_READ_ARRAY = re.compile(r"^\s*(?:IFS=(?:'[^']*'|\"[^\"]*\"|\S*)\s+)?read\s+-ra?\s+([A-Za-z_]\w*)\s*<<<\s*(\"[^\"]*\"|\S+)")
_REF = re.compile(r"\$\{([A-Za-z_]\w*)(?:\[@\])?\}|\$([A-Za-z_]\w*)")


def logical_lines(text: str) -> list[str]:
    """Lines with backslash continuations joined."""
    return re.sub(r"\\\n", " ", text).splitlines()


def assignments(text: str) -> dict[str, list[str]]:
    """Unconditional variable defaults; arrays (`read -ra`) and strings both as word lists."""
    values: dict[str, list[str]] = {}
    for line in logical_lines(text):
        match = _ASSIGN.match(line)
        if match and match.group(1) not in values:
            raw = match.group(2)
            value = raw[1:-1] if raw[:1] in "\"'" and len(raw) >= 2 else raw
            values[match.group(1)] = [expand(value, values)]
            continue
        array = _READ_ARRAY.match(line)
        if array and array.group(1) not in values:
            source = array.group(2).strip('"')
            values[array.group(1)] = expand(source, values).split()
    return values


def expand(text: str, values: dict[str, list[str]]) -> str:
    """`$NAME`, `${NAME}` and `${NAME[@]}` replaced by known values (words joined by spaces)."""
    def sub(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return " ".join(values[name]) if name in values else match.group(0)

    return _REF.sub(sub, text)


def expand_words(words: list[str], values: dict[str, list[str]]) -> list[str]:
    """Shell words after expansion: a quoted `"${ARR[@]}"` gives one word per element, a quoted
    `"$VAR"` stays one word."""
    out: list[str] = []
    for word in words:
        whole = _REF.fullmatch(word)
        if whole and (whole.group(1) or whole.group(2)) in values:
            name = whole.group(1) or whole.group(2)
            out.extend(values[name] if "[@]" in word or len(values[name]) > 1 else [values[name][0]])
        else:
            out.append(expand(word, values))
    return out


def split(line: str) -> list[str] | None:
    try:
        return shlex.split(line, comments=True)
    except ValueError:
        return None
