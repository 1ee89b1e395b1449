"""Token counting for text the model never saw through a server's usage fields.

Communication tokens (MAS-Bench appendix C) and the scripted backend's usage are counted
here. The default is a tokenizer-free approximation (word pieces and punctuation), so
counts are reproducible offline; `hf:<path>` uses a local Hugging Face tokenizer file
when the `tokenizers` package is installed.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

_PIECE = re.compile(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]")

TokenCounter = Callable[[str], int]


def approx_tokens(text: str) -> int:
    """Roughly BPE-like: letters runs, digit groups of up to three, single symbols."""
    return len(_PIECE.findall(text)) if text else 0


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
