"""A merge-conflict resolver backed by a language model (appendix C's llm stage).

The paper resolves each conflict region, with c = 5 lines of context either side, by a
fine-tuned small code model decoding at temperature 0. We do not ship that model:
`LLMResolver` asks any configured model (`ask(prompt) -> reply`, which the platform backs
with the agents' own backend clients at temperature 0) with our own prompt, once per
region. Its answer replaces the region with its context. An answer we cannot use leaves
the region as it was, so its file keeps its markers and the stage fails, with the reason
kept in `failures`:

* the call failed after the client's retries (server error, timeout, refused connection):
  `ask` raises `ResolverCallFailed`;
* the reply is empty, or its code block is empty;
* the reply opens a code block it never closes (an answer cut off by max_tokens);
* the answer still holds a conflict marker line (`<<<<<<<`, `=======`, `>>>>>>>`).

Code fences are unwrapped (the first fenced block is the answer; a reply with no fence is
taken whole), and a leading `<think>...</think>` block of a reasoning model is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from masgrid.sdk.tasks import ScoringCallFailed

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
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
#: a conflict marker line: <<<<<<< or >>>>>>> (with an optional label), or ======= alone
_MARKERS = re.compile(r"^(?:<{7}|>{7})(?: .*)?$|^={7}$", re.MULTILINE)


#: what `ask` raises when the model call failed after its retries (the message says why)
ResolverCallFailed = ScoringCallFailed


def read_answer(reply: str) -> tuple[str | None, str | None]:
    """(the answer, None), or (None, why it cannot be used)."""
    reply = _THINK.sub("", reply or "", count=1)
    match = _FENCE.search(reply)
    if match:
        text = match.group(1)
    elif "```" in reply:
        return None, "the reply opens a code block it never closes (cut off?)"
    else:
        text = reply
    if not text.strip():
        return None, "empty answer"
    if _MARKERS.search(text):
        return None, "the answer still holds conflict markers"
    return (text if text.endswith("\n") else text + "\n"), None


def extract_answer(reply: str) -> str | None:
    """The usable answer of a reply, or None."""
    return read_answer(reply)[0]


class LLMResolver:
    """A `merge.Resolver` asking `ask(prompt) -> reply` once per conflict region; what went
    wrong with each rejected region is appended to `failures`."""

    def __init__(self, ask: Callable[[str], str]) -> None:
        self.ask = ask
        self.calls = 0
        self.failures: list[str] = []

    def __call__(self, snippet: str) -> str:
        self.calls += 1
        try:
            answer, why = read_answer(self.ask(PROMPT.format(snippet=snippet)))
        except ResolverCallFailed as exc:
            answer, why = None, f"model call failed: {exc}"
        if answer is None:
            self.failures.append(f"region {self.calls}: {why}")
            return snippet
        return answer


def llm_resolver(ask: Callable[[str], str]) -> LLMResolver:
    """A resolver asking `ask` (see `LLMResolver`)."""
    return LLMResolver(ask)
