"""Token counting for text the model never saw through a server's usage fields.

Communication tokens (MAS-Bench appendix C) and the scripted backend's usage are counted
here, in the model's own units whenever its tokenizer is at hand: a counter spec is
`hf:<tokenizer.json>` (a local Hugging Face `tokenizers` file), `hf-package:<package>/<path>`
(such a file shipped inside an installed package), or `approx`, a tokenizer-free estimate
(letter runs, digit groups, symbols). `execution.token_counter: auto` takes the model preset's
`tokenizer` and falls back to `approx` only when none is available; `resolve_counter` says
which counter a run used and why, and the run records it (docs/results.md, provenance).
"""

from __future__ import annotations

import hashlib
import re
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path
from collections.abc import Callable

from cachetools import LRUCache
from pydantic import BaseModel, ConfigDict

_PIECE = re.compile(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]")

TokenCounter = Callable[[str], int]


#: texts shorter than this are counted afresh (the regex is as cheap as a cache lookup)
CACHE_MIN_CHARS = 256
#: characters kept in the count cache per process (the cache holds the texts themselves)
CACHE_CHARS = 16 * 2**20


def _pieces(text: str) -> int:
    return len(_PIECE.findall(text))


# A chat history is counted again at every call (the stand-in counts each request's prompt,
# the environment each delivered message): the same system prompts and observations recur.
# Entries are (count, characters); the cache is bounded by the characters of the texts it keeps.
_COUNTS: LRUCache[str, tuple[int, int]] = LRUCache(maxsize=CACHE_CHARS, getsizeof=lambda entry: entry[1])
_LOCK = threading.Lock()  # Serve replicas may count from several threads


def _cached_pieces(text: str) -> int:
    with _LOCK:
        entry = _COUNTS.get(text)
    if entry is None:
        entry = (_pieces(text), len(text))
        if entry[1] <= CACHE_CHARS:  # a larger text is counted, not kept
            with _LOCK:
                _COUNTS[text] = entry
    return entry[0]


def approx_tokens(text: str) -> int:
    """Roughly BPE-like: letters runs, digit groups of up to three, single symbols."""
    if not text:
        return 0
    return _pieces(text) if len(text) < CACHE_MIN_CHARS else _cached_pieces(text)


APPROX = "approx"
AUTO = "auto"
_FILE_PREFIXES = ("hf:", "hf-package:")


def check_spec(spec: str, allow_auto: bool = True) -> str:
    """Validate a counter spec's form (not whether its file exists here)."""
    if spec == APPROX or (allow_auto and spec == AUTO):
        return spec
    if spec.startswith(_FILE_PREFIXES) and spec.split(":", 1)[1].strip():
        return spec
    forms = "'auto', " if allow_auto else ""
    raise ValueError(f"unknown token counter {spec!r}; use {forms}'approx', 'hf:<tokenizer.json>' or "
                     "'hf-package:<package>/<path to tokenizer.json>'")


def tokenizer_file(spec: str) -> Path:
    """The tokenizer.json a file spec names; a ValueError if it is not there."""
    check_spec(spec, allow_auto=False)
    kind, _, where = spec.partition(":")
    if kind == "hf":
        path = Path(where).expanduser()
    else:
        package, _, inner = where.partition("/")
        try:
            path = Path(str(resources.files(package).joinpath(inner)))
        except ModuleNotFoundError:
            raise ValueError(f"token counter {spec}: package {package!r} is not installed") from None
    if not path.is_file():
        raise ValueError(f"token counter {spec}: no tokenizer file at {path}")
    return path


@lru_cache(maxsize=8)
def get_counter(spec: str = APPROX) -> TokenCounter:
    """The counting function of a spec (`approx`, `hf:...`, `hf-package:...`); a ValueError
    with one readable line when the tokenizer cannot be loaded."""
    if check_spec(spec, allow_auto=False) == APPROX:
        return approx_tokens
    path = tokenizer_file(spec)
    try:
        from tokenizers import Tokenizer
    except ImportError:  # pragma: no cover - a declared dependency
        raise ValueError(f"token counter {spec} needs the `tokenizers` package") from None
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - tokenizers raises a bare Exception for bad files
        raise ValueError(f"token counter {spec}: {path} is not a tokenizers tokenizer.json ({exc})") from None
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids) if text else 0


@lru_cache(maxsize=8)
def file_sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class CounterChoice(BaseModel):
    """The counter a run uses, and why: recorded with the run (`token_counter`,
    `token_counter_source`, `tokenizer_sha256`) so an approximate count is never silent."""

    model_config = ConfigDict(frozen=True)

    spec: str
    source: str
    sha256: str | None = None

    @property
    def approximate(self) -> bool:
        return self.spec == APPROX


def resolve_counter(requested: str, model_tokenizer: str | None, model_name: str) -> CounterChoice:
    """`requested` is execution.token_counter; `auto` takes the model preset's tokenizer and
    uses `approx` only when the preset names none or its file cannot be loaded on this host.
    An explicitly requested tokenizer that cannot be loaded is an error, not a fallback."""
    if requested == APPROX:
        return CounterChoice(spec=APPROX, source="requested")
    if requested != AUTO:
        get_counter(requested)
        return CounterChoice(spec=requested, source="requested", sha256=file_sha256(str(tokenizer_file(requested))))
    if model_tokenizer is None:
        return CounterChoice(spec=APPROX, source=f"fallback: model preset {model_name!r} names no tokenizer")
    try:
        get_counter(model_tokenizer)
    except ValueError as exc:
        return CounterChoice(spec=APPROX, source=f"fallback: {exc}")
    return CounterChoice(spec=model_tokenizer, source="model preset",
                         sha256=file_sha256(str(tokenizer_file(model_tokenizer))))
