"""Token counting for text the model never saw through a server's usage fields.

Communication tokens (MAS-Bench appendix C) and the scripted backend's usage are counted
here. The default is a tokenizer-free approximation (word pieces and punctuation), so
counts are reproducible offline; `hf:<path>` uses a local Hugging Face tokenizer file
when the `tokenizers` package is installed.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Callable

from cachetools import LRUCache

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


@lru_cache(maxsize=8)
def get_counter(spec: str = "approx") -> TokenCounter:
    """Resolve a counter spec: `approx` or `hf:/local/path/to/tokenizer.json`."""
    if spec == "approx":
        return approx_tokens
    if spec.startswith("hf:"):
        try:
            from tokenizers import Tokenizer  # type: ignore[import-not-found]
        except ImportError as exc:  # pragma: no cover - optional dependency
            raise ValueError("token_counter=hf:... needs `pip install tokenizers`") from exc
        tok = Tokenizer.from_file(spec[3:])
        return lambda text: len(tok.encode(text).ids) if text else 0
    raise ValueError(f"unknown token counter {spec!r}; use 'approx' or 'hf:<tokenizer.json>'")
