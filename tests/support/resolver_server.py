"""Resolver models for the CooperBench llm stage, served by the loopback chat server.

`RESOLVED_SLUGIFY` is the resolution of the synthetic pool's pair 1,2 written here from the
two feature descriptions (synthetic.py): feature 1 drops punctuation before splitting,
feature 2 adds a `sep` argument. A correct resolver replaces the conflict region of the
excerpt it is sent by that function; the others answer as a broken model would.
"""

from __future__ import annotations

import re

from tests.support.chat_server import Reply

RESOLVED_SLUGIFY = ('def slugify(text, sep="-"):\n'
                    '    words = re.sub(r"[^\\w\\s]", "", text).lower().split()\n'
                    '    return sep.join(words)\n')
_REGION = re.compile(r"^<{7}.*?^>{7}[^\n]*\n", re.MULTILINE | re.DOTALL)


def excerpt(request: dict) -> str:
    """The conflicted excerpt of a resolver request: the prompt's last fenced block."""
    prompt = request["messages"][-1]["content"]
    block = prompt.rsplit("\n```\n", 1)[1]
    assert block.endswith("```"), prompt
    return block[:-3]


def correct(request: dict) -> Reply:
    snippet = excerpt(request)
    region = _REGION.search(snippet)
    assert region is not None, snippet
    fixed = snippet[:region.start()] + RESOLVED_SLUGIFY + snippet[region.end():]
    return Reply(text=f"Merged:\n```python\n{fixed}```\n")


#: name -> script; the broken ones and what the row must say about them
BROKEN = {
    "markers": (lambda request: Reply(text="```\n" + excerpt(request) + "```"), "still holds conflict markers"),
    "empty": (lambda request: Reply(text="```python\n\n```"), "empty answer"),
    "cut_off": (lambda request: Reply(text="```python\ndef slugify(text, sep"), "never closes"),
    "http_500": (lambda request: Reply(status=500), "http_5xx"),
}
