"""Final-answer normalisation (appendix A.1): an option letter for multiple choice, an
integer for AIME. Models phrase a final answer in many ways; the parser accepts the
explicit forms (a "final answer" marker, "the answer is", \\boxed{}, a bare answer) and
takes the last explicit one, so a reply that first discusses option B and then concludes
"Final answer: C" is read as C. Anything else is unparsable: scored wrong and counted.
"""

from __future__ import annotations

import re

#: a letter after a marker: "(b)", "**B**" or a capital standing alone ("the answer is a
#: matter of taste" must not read as A, hence no lower-case letter outside brackets)
_LETTER = re.compile(r"\s*(?:[Oo]ption\s+)?(?:\(([A-Za-z])\)|\*\*\s*([A-Z])\s*\*\*|([A-Z])(?![A-Za-z]))")
#: a dash after a marker separates only when a space follows ("answer is -5" is minus five)
_SEP = r"(?::|-(?=\s))"
_MARKERS = (
    r"final\s+answer\s*(?:is)?\s*" + _SEP + r"?\s*",
    r"(?:the\s+)?(?:correct\s+)?answer\s+is\s*" + _SEP + r"?\s*",
    r"answer\s*" + _SEP + r"\s*",
    r"(?:I|we)\s+(?:choose|pick|select)\s+(?:option\s+)?",
)
_OPTION = re.compile(r"^\s*\(?\**\s*(?:option\s+)?([A-Z])\s*\**\)?\s*[.:)]?\s*$", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\s*\{\s*([^{}]*)\}")
_INT = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.0+)?")


def _marker_tails(text: str) -> list[str]:
    """The text after each answer marker, in order of appearance (the last one wins)."""
    found: list[tuple[int, str]] = []
    for marker in _MARKERS:
        for m in re.finditer(marker, text, re.IGNORECASE):
            found.append((m.start(), text[m.end():]))
    return [tail for _, tail in sorted(found)]


def parse_choice(text: str, n_choices: int) -> str:
    """The option letter (A, B, ...) of a reply; ValueError if none is stated clearly."""
    letters = "ABCDEFGHIJ"[:n_choices]
    if not text or not text.strip():
        raise ValueError("empty answer")
    candidates: list[str] = []
    for box in _BOXED.findall(text):
        candidates.append(box)
    for tail in _marker_tails(text):
        m = _LETTER.match(tail)
        if m:
            candidates.append(next(g for g in m.groups() if g))
    if not candidates:
        whole = _OPTION.match(text.strip().splitlines()[-1]) if text.strip() else None
        if whole:
            candidates.append(whole.group(1))
    for candidate in reversed(candidates):
        letter = candidate.strip().strip("()*").upper()
        if len(letter) == 1 and letter in letters:
            return letter
    raise ValueError(f"no option letter among {', '.join(letters)} stated as the final answer")


def _to_int(token: str) -> int | None:
    token = token.replace(",", "").strip()
    try:
        value = float(token)
    except ValueError:
        return None
    return int(value) if value == int(value) else None


def parse_integer(text: str) -> int:
    """The integer final answer of a reply; ValueError if none is stated clearly."""
    if not text or not text.strip():
        raise ValueError("empty answer")
    candidates: list[str] = list(_BOXED.findall(text))
    for tail in _marker_tails(text):
        m = re.match(r"\s*\$?\s*(" + _INT.pattern + r")(?!\d|[.,]\d)", tail)
        if m:
            candidates.append(m.group(1))
    if not candidates and re.fullmatch(r"\s*\$?\s*" + _INT.pattern + r"\s*\$?\s*\.?\s*", text):
        candidates.append(text.strip().strip("$.").strip())
    for candidate in reversed(candidates):
        value = _to_int(candidate.strip().strip("$"))
        if value is not None:
            return value
    raise ValueError("no integer stated as the final answer")
