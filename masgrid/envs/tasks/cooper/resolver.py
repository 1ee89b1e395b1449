"""A merge-conflict resolver backed by a language model (appendix C's llm stage).

The paper resolves each conflict region, with a small fixed context, by a fine-tuned small
code model decoding at temperature 0. We do not ship that model: `llm_resolver` wraps any
text-in/text-out callable (e.g. a configured chat backend at temperature 0) with our own
prompt. Its answer replaces the region; an answer that is empty or still holds conflict
markers is rejected by returning the region unchanged, so the stage then counts as failed
instead of writing half-resolved code.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from masgrid.envs.tasks.cooper.merge import Resolver

PROMPT = """Two developers changed the same part of a file and git could not merge their edits.
Below is the conflicted excerpt: a few unchanged lines, then the conflict between the
<<<<<<< and >>>>>>> markers (first developer's version above =======, second's below), then a
few unchanged lines.

Rewrite the whole excerpt so that it keeps what both versions intended, with no conflict
markers, and change nothing outside the conflict beyond what joining the two requires.
Reply with the rewritten excerpt only, inside one ``` code block.

```
{snippet}```"""

_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_MARKERS = re.compile(r"^(<{7}|={7}|>{7})", re.MULTILINE)


def extract_answer(reply: str) -> str | None:
    """The code block of the reply (the whole reply when it has none); None when unusable."""
    match = _FENCE.search(reply)
    text = match.group(1) if match else reply
    if not text.strip() or _MARKERS.search(text):
        return None
    return text if text.endswith("\n") else text + "\n"


def llm_resolver(ask: Callable[[str], str]) -> Resolver:
    """A `Resolver` asking `ask(prompt) -> reply` once per conflict region."""

    def resolve(snippet: str) -> str:
        answer = extract_answer(ask(PROMPT.format(snippet=snippet)))
        return snippet if answer is None else answer

    return resolve
