"""Final-answer normalisation (appendix A.1): an option letter for multiple choice, an
integer for AIME.

The rule (docs/tasks/simas.md, "Parsing the final answer"):

1. Clean-up. Markdown emphasis (``**C**``, ``*C*``, ``_C_``, backticks), heading marks and
   LaTeX wrappers (``$...$``, ``\\(...\\)``, ``\\[...\\]``, ``\\text{}``, ``\\textbf{}``,
   ``\\mathrm{}``, ``\\mathbf{}``, spacing commands) are dropped before reading;
   ``\\frac{a}{b}`` reads as ``a/b``.
2. Statements. A statement is a marker and the text after it up to the end of its
   sentence (a line break, or ``.``, ``!``, ``?``, ``;`` followed by a space or the end):
   - a *final* statement: "final answer" (``Final answer: C``, ``**Final Answer:** B``,
     "my final answer is 17"); a marker alone on its line (a heading) reads the next line;
   - an *explicit* statement: ``\\boxed{...}`` (its braces; a box right after a marker is
     read as that statement's answer), "answer is / would be / should
     be", "option is", "choice is", ``Answer:``, "I choose / pick / select / go with";
     an explicit statement whose sentence opens with "if", "suppose", "assuming",
     "unless", "had", "were" or "otherwise" (an aside such as "if g were 10 the answer is
     B") is *conditional*.
   A statement counts only if it affirms something (below); "the answer is a matter of
   taste" or "the answer is not B" is prose, not a statement.
3. The deciding statement is the last final statement; without one the last explicit
   statement; without one the last conditional one; without any, the last non-empty line
   when it is nothing but an answer ("C", "(C)", "17"). The requested final line therefore
   beats any earlier or later "the answer is", boxed or aside.
4. Reading a statement. From its start (after filler such as "option", "I think",
   "probably"): an answer, then more answers joined by "or", "and", "but", "nor", ",",
   "/" or "&"; an answer preceded by "not" is ruled out. Reading stops at anything else,
   so "C because B is wrong" and "C) 42" read as C. Option letters are capitals, or any
   letter inside ``()``, ``[]``, ``<>``, ``{}``; "I" before a lower-case word is the
   pronoun. Integers: a sign, digits, thousands groups with ",", "_" or a space
   (``1,000``, ``1_000``, ``1 000``), a zero decimal part (``24.0``); an expression with
   "=" reads as its plain-number side ("2^4 + 1 = 17" is 17); a fraction is its value.
5. Outcome. One affirmed answer: that answer. Several different ones ("A or B", "17 or
   18"): **ambiguous**, never a guess. An option letter beyond the choices, a non-integer
   (2.5, 3/4), an expression without a plain value, or ``1.000`` (1 or 1000? a dot
   before exactly three digits is refused) are **unparsable** with the reason. Nothing
   stated: unparsable.

``parse_choice`` and ``parse_integer`` return the answer or raise ``AnswerError`` (a
ValueError whose ``reading`` says why, and whether the reply was ambiguous); ``read_answer``
returns the full reading without raising.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

LETTERS = "ABCDEFGHIJ"

Status = Literal["ok", "ambiguous", "unparsable"]
Source = Literal["final", "explicit", "conditional", "bare"]


@dataclass(frozen=True)
class AnswerReading:
    """What a reply states: the answer (status ok), or why there is none."""

    value: str | int | None
    status: Status
    reason: str | None = None
    #: the different answers a reply affirmed in its deciding statement (ambiguous), in order
    candidates: tuple[str | int, ...] = ()
    #: which kind of statement decided
    source: Source | None = None
    #: the deciding statement's text after its marker, as read (cleaned), for the record
    statement: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def ambiguous(self) -> bool:
        return self.status == "ambiguous"


class AnswerError(ValueError):
    """A reply without one clear answer; `reading` holds the status and the reason."""

    def __init__(self, reading: AnswerReading) -> None:
        super().__init__(reading.reason or reading.status)
        self.reading = reading

    @property
    def ambiguous(self) -> bool:
        return self.reading.ambiguous


# -- 1. clean-up --------------------------------------------------------------------------------
_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mathit|operatorname|mbox)\s*\{([^{}]*)\}")
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_EMPHASIS = re.compile(r"(?<![A-Za-z0-9])(\*{1,3}|_{1,3})(?=\S)(.+?)(?<=\S)\1(?![A-Za-z0-9])")


def clean(text: str) -> str:
    """The reply with emphasis and LaTeX wrappers dropped (step 1 of the rule)."""
    t = text.replace("\r\n", "\n").replace("\r", "\n")
    t = t.replace("\u2212", "-").replace("\u2013", "-").replace("\u2014", "-")
    for space in ("\u00a0", "\u202f", "\u2009", "\u2007"):
        t = t.replace(space, " ")
    t = re.sub(r"\\[,;:! ]", " ", t)
    for _ in range(3):  # nested wrappers: \boxed{\text{\textbf{C}}}
        t = _WRAPPERS.sub(r"\1", t)
        t = _FRAC.sub(r"\1/\2", t)
    t = re.sub(r"\\left\b|\\right\b", "", t)
    t = t.replace("\\times", "×").replace("\\cdot", "·").replace("\\div", "÷")
    t = re.sub(r"\\[()\[\]]", " ", t)
    t = t.replace("$", " ")
    t = t.replace("`", "")
    for _ in range(3):
        t = _EMPHASIS.sub(r"\2", t)
    t = t.replace("**", "").replace("__", "")
    t = re.sub(r"(?m)^[ \t]*#+[ \t]*", "", t)
    return t


# -- 2. statements ------------------------------------------------------------------------------
_END = re.compile(r"\n|[.!?;](?=\s|$)")
_FINAL = re.compile(r"\bfinal\s+answers?\b(?:\s+(?:is|was|would\s+be|will\s+be|should\s+be)\b)?\s*(?:[:=]|-(?=\s))?",
                    re.IGNORECASE)
_EXPLICIT = re.compile(
    r"\b(?:answer|option|choice)\s+(?:is|would\s+be|should\s+be|must\s+be|will\s+be)\b\s*(?:[:=]|-(?=\s))?"
    r"|\banswer\s*(?:[:=]|-(?=\s))"
    r"|^[ \t]*answer[ \t]*$"
    r"|\b(?-i:I|[Ww]e)\s+(?:choose|pick|select|go\s+with)\b",
    re.IGNORECASE | re.MULTILINE)
_BOXED = re.compile(r"\\boxed\s*\{")
_CONDITIONAL = re.compile(r"^[\s(\[\"'-]*(?:if|suppose|supposing|assume|assuming|unless|had|were|otherwise)\b",
                          re.IGNORECASE)


@dataclass(frozen=True)
class _Statement:
    start: int
    kind: Source
    content: str


def _sentence_after(text: str, pos: int) -> str:
    """The text from pos to the end of its sentence; a marker alone on its line reads the next line."""
    m = _END.search(text, pos)
    content = text[pos:m.start() if m else len(text)]
    if not content.strip() and (m is None or text[m.start()] == "\n" or text[m.start()] in ".:"):
        nl = text.find("\n", pos)
        if nl >= 0 and not text[pos:nl].strip().strip(".:"):
            rest = text[nl + 1:]
            nxt = re.search(r"\S", rest)
            if nxt:
                start = nl + 1 + nxt.start()
                m2 = _END.search(text, start)
                return text[start:m2.start() if m2 else len(text)]
    return content


def _boxed_content(text: str, open_brace: int) -> str:
    depth, i = 1, open_brace
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[open_brace:i - 1] if depth == 0 else text[open_brace:]


def _sentence_start(text: str, pos: int) -> int:
    best = 0
    for m in _END.finditer(text, 0, pos):
        best = m.end()
    return best


def _statements(text: str) -> list[_Statement]:
    """Every marker in order of position (step 2), with the text it introduces."""
    found: list[_Statement] = []
    finals = [(m.start(), m.end()) for m in _FINAL.finditer(text)]
    for start, end in finals:
        found.append(_Statement(start, "final", _sentence_after(text, end)))
    for m in _EXPLICIT.finditer(text):
        if any(s <= m.start() < e or m.start() <= s < m.end() for s, e in finals):
            continue  # the "answer:" of "final answer:"
        head = text[_sentence_start(text, m.start()):m.start()]
        kind: Source = "conditional" if _CONDITIONAL.match(head) else "explicit"
        found.append(_Statement(m.start(), kind, _sentence_after(text, m.end())))
    for m in _BOXED.finditer(text):
        head = text[_sentence_start(text, m.start()):m.start()]
        kind = "conditional" if _CONDITIONAL.match(head) else "explicit"
        found.append(_Statement(m.start(), kind, _boxed_content(text, m.end())))
    return sorted(found, key=lambda s: s.start)


# -- 4. reading a statement ---------------------------------------------------------------------
_FILLER = re.compile(r"\s*(?:(?:that|then|therefore|thus|so|probably|likely|clearly|definitely|certainly|simply|"
                     r"just|indeed|I\s+think|I\s+believe|we\s+think|it\s+is|it's|either)\b[\s,:]*)*",
                     re.IGNORECASE)
_NOT = re.compile(r"\s*not\s+", re.IGNORECASE)
_SEPARATOR = re.compile(r"\s*(?:,\s*(?:(?:or|and|but|nor)\b\s*)?|(?:or|and|but|nor)\b\s*|[/&]\s*)", re.IGNORECASE)
_OPTION_WORD = r"(?:(?i:option|choice|letter)\s+)?"
_LETTER_TOKEN = re.compile(_OPTION_WORD + r"(?:\(([A-Za-z])\)|\[([A-Za-z])\]|<([A-Za-z])>|\{([A-Za-z])\}"
                           r"|(?!I\s+[a-z])([A-Z])(?![A-Za-z0-9]))")
_NUMBER = (r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d|,\d)|\d{1,3}(?: \d{3})+(?![\d])|\d+(?:_\d{3})+(?![\d_])"
           r"|\d+(?:\.\d+)?)")
_TERM = r"(?:" + _NUMBER + r"|[A-Za-z](?![A-Za-z]))"
_OP = r"\s*(?:[-+*/^×·÷=])\s*"
_EXPR = re.compile(r"\(?\s*" + _TERM + r"(?:\s*\)?" + _OP + r"\(?\s*" + _TERM + r")*\s*\)?")


@dataclass(frozen=True)
class _Item:
    """One answer a statement names: a value, or why it is not one."""

    value: str | int | None
    problem: str | None
    negated: bool


def _letter_at(text: str, pos: int) -> tuple[str, int] | None:
    m = _LETTER_TOKEN.match(text, pos)
    if not m:
        return None
    bracketed = next((g for g in m.groups()[:4] if g), None)
    letter = bracketed.upper() if bracketed else m.group(5)
    return letter, m.end()


def _number_value(raw: str) -> tuple[int | None, str | None]:
    """(the integer a number token stands for, or None and why not)."""
    token = raw.strip()
    if re.fullmatch(r"[-+]?\d{1,3}\.\d{3}", token):
        return None, f"{token} could be a decimal or a thousands group; write it without the dot"
    digits = token.replace(",", "").replace("_", "").replace(" ", "")
    value = Fraction(digits)
    if value.denominator != 1:
        return None, f"{token} is not an integer"
    return int(value), None


def _expression_value(expr: str) -> tuple[int | None, str | None]:
    expr = expr.strip()
    sides = [s.strip().strip("()").strip() for s in expr.split("=")]
    values: list[int] = []
    problems: list[str] = []
    for side in sides:
        if re.fullmatch(_NUMBER, side):
            v, why = _number_value(side)
        else:
            frac = re.fullmatch(r"(" + _NUMBER + r")\s*/\s*(" + _NUMBER + r")", side)
            if not frac:
                continue
            (num, _), (den, _) = _number_value(frac.group(1)), _number_value(frac.group(2))
            if num is None or den is None or den == 0:
                v, why = None, f"{side} is not a number"
            else:
                q = Fraction(num, den)
                v, why = (int(q), None) if q.denominator == 1 else (None, f"{side} is not an integer")
        if v is None:
            problems.append(why or f"{side} is not a number")
        elif v not in values:
            values.append(v)
    if len(values) > 1:
        return None, f"{expr} states several values ({', '.join(map(str, values))})"
    if values:
        return values[0], None
    if problems:
        return None, problems[-1]
    return None, f"{expr} is an expression, not a number"


def _integer_at(text: str, pos: int) -> tuple[_Item, int] | None:
    m = _EXPR.match(text, pos)
    if not m or not re.search(r"\d", m.group(0)):
        return None
    value, problem = _expression_value(m.group(0))
    return _Item(value, problem, False), m.end()


def _scan(content: str, pos: int, kind: Literal["choice", "integer"]) -> tuple[list[_Item], int]:
    """Answers joined by separators from `pos` on, each possibly after "not"; (items, where reading stopped)."""
    items: list[_Item] = []
    while True:
        start = pos
        if items:
            sep = _SEPARATOR.match(content, pos)
            if not sep or sep.end() == pos:
                return items, start
            pos = sep.end()
        neg = _NOT.match(content, pos)
        if neg:
            pos = neg.end()
        if kind == "choice":
            letter = _letter_at(content, pos)
            if letter is None:
                return items, start
            item, pos = _Item(letter[0], None, neg is not None), letter[1]
        else:
            number = _integer_at(content, pos)
            if number is None:
                return items, start
            item, pos = _Item(number[0].value, number[0].problem, neg is not None), number[1]
        items.append(item)


def _read_statement(content: str, kind: Literal["choice", "integer"]) -> list[_Item]:
    """The answers a statement names, in order (step 4): after filler, and a box right after the marker."""
    pos = _FILLER.match(content, 0).end()  # type: ignore[union-attr]
    boxed = _BOXED.match(content, pos)  # "Final answer: \\boxed{17}" reads the box
    if boxed:
        pos = _FILLER.match(content, boxed.end()).end()  # type: ignore[union-attr]
    return _scan(content, pos, kind)[0]


# -- 3 and 5. deciding --------------------------------------------------------------------------
def _verdict(items: list[_Item], kind: str, n_choices: int | None, source: Source, statement: str) -> AnswerReading:
    """Step 5: the outcome of the deciding statement's affirmed answers."""
    affirmed = [i for i in items if not i.negated]
    values = list(dict.fromkeys(i.value for i in affirmed if i.value is not None))
    problems = [i.problem for i in affirmed if i.value is None]
    shown = statement.strip()
    if len(values) + len(problems) > 1:  # several answers, unless all are the same readable one
        names = ", ".join([*map(str, values), *(str(p) for p in problems)])
        return AnswerReading(None, "ambiguous", f"the {source} statement names several answers ({names}): "
                             f"{shown[:80]!r}", tuple(values), source, shown)
    if problems:
        return AnswerReading(None, "unparsable", f"the {source} statement {shown[:80]!r}: {problems[0]}", (),
                             source, shown)
    value = values[0]
    if kind == "choice":
        assert isinstance(value, str), "_scan reads a choice statement's answers as letters"
        if value not in LETTERS[:n_choices]:
            return AnswerReading(None, "unparsable", f"the {source} statement names {value}, not one of "
                                 f"{', '.join(LETTERS[:n_choices])}", (), source, shown)
    return AnswerReading(value, "ok", None, (), source, shown)


def read_answer(text: str | None, n_choices: int | None) -> AnswerReading:
    """The reading of a reply: an option letter when `n_choices` is given, else an integer."""
    kind: Literal["choice", "integer"] = "integer" if n_choices is None else "choice"
    if not text or not text.strip():
        return AnswerReading(None, "unparsable", "empty answer")
    cleaned = clean(text)
    readable = []
    for s in _statements(cleaned):
        items = _read_statement(s.content, kind)
        if any(not i.negated for i in items):
            readable.append((s, items))
    for tier in ("final", "explicit", "conditional"):
        chosen = [(s, items) for s, items in readable if s.kind == tier]
        if chosen:
            s, items = chosen[-1]
            return _verdict(items, kind, n_choices, s.kind, s.content)
    lines = [line.strip() for line in cleaned.splitlines() if line.strip()]
    if lines:
        last = lines[-1].rstrip(".").strip()
        items = _read_statement(last, kind)
        if any(not i.negated for i in items) and _whole(last, kind):
            return _verdict(items, kind, n_choices, "bare", last)
    what = "option letter" if kind == "choice" else "integer"
    return AnswerReading(None, "unparsable", f"no {what} stated as the final answer")


def _whole(line: str, kind: Literal["choice", "integer"]) -> bool:
    """The line is nothing but answers and their separators (a bare final line)."""
    items, end = _scan(line, 0, kind)
    return bool(items) and end == len(line)


def parse_choice(text: str, n_choices: int) -> str:
    """The option letter (A, B, ...) of a reply; AnswerError (a ValueError) if none is stated clearly."""
    reading = read_answer(text, n_choices)
    if not reading.ok:
        raise AnswerError(reading)
    return str(reading.value)


def parse_integer(text: str) -> int:
    """The integer final answer of a reply; AnswerError (a ValueError) if none is stated clearly."""
    reading = read_answer(text, None)
    if not reading.ok:
        raise AnswerError(reading)
    assert isinstance(reading.value, int)
    return reading.value
