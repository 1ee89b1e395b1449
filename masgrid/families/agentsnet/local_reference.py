"""Reply parsing as the released AgentsNet code does it (`agentsnet.parser=reference`).

The default (`strict`, local.py) reads what a model meant; this mode reproduces what the
reference implementation (floriangroetschla/AgentsNet, read for its behaviour only)
delivered, so numbers can be compared with the paper's. Rules, in our words:

Messages (calls 1..T):
1. every two-character sequence backslash + "n" in the reply becomes a line break, also
   inside JSON strings, where a raw line break is not allowed: a message written with an
   escaped newline (`"Hi\\nBob"`) no longer decodes;
2. the candidates are, for each "{" in the reply from left to right, the text from that
   "{" up to the last "}" of the whole reply;
3. the first candidate that is one complete JSON object, all of whose keys are agent
   names and all of whose values are strings, is the reply's message object;
   consequences: of a draft object followed by a final one, the last is used (the first
   candidate spans both and does not decode); prose after the object that contains a "}"
   makes every candidate fail;
4. keys that name an agent who is not a neighbour are dropped silently and the rest is
   delivered; a key that is not an agent name at all rejects the candidate.
"Agent name" is, as in the reference, a name of the global pool the graph's names are
drawn from: here masgrid/families/agentsnet/conf/data/first_names.txt and the hyphenated pairs of two of them that
large graphs use (`graphs.is_agent_name`), plus the agent's own neighbours.

Final answer (call T + 1): the first "### Final Answer ###" that is followed, after
optional whitespace, by an option; the options are tried in the order the agent was given
them and need not end at a word boundary, so with "Group 1" listed before "Group 10" the
answer "Group 10" is read as "Group 1", "Danielle" as "Daniel", "Not sure" as "No".

A reply none of whose candidates qualifies gets the same single retry as in strict mode.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from masgrid.families.agentsnet.local_protocol import FINAL_MARKER, MessageFormatError


@dataclass(frozen=True)
class ReferenceMessages:
    """The message object the reference would accept, split by whether it reaches anyone."""

    delivered: dict[str, str]
    dropped: list[str] = field(default_factory=list)  # agent names that are not neighbours


def _default_is_name() -> Callable[[str], bool]:
    from masgrid.families.agentsnet.graphs import is_agent_name  # the pool lives with the generator

    return is_agent_name


def reference_parse_messages(text: str | None, neighbors: list[str],
                             is_name: Callable[[str], bool] | None = None) -> ReferenceMessages:
    """The reference's message object of a reply (rules 1-4 above); MessageFormatError if none."""
    if not text:
        raise MessageFormatError("the reply was empty")
    known = is_name or _default_is_name()
    nbs = set(neighbors)
    body = text.replace("\\n", "\n")
    end = body.rfind("}")
    problem = "no JSON object was found"
    start = body.find("{")
    while 0 <= start < end:
        try:
            value = json.loads(body[start:end + 1])
        except json.JSONDecodeError:
            value = None
        except RecursionError:  # the reference would crash here; we refuse the reply instead
            raise MessageFormatError("the JSON is nested too deeply") from None
        if isinstance(value, dict):
            strangers = [k for k in value if k not in nbs and not known(k)]
            if strangers:
                problem = f"{', '.join(strangers)} is not an agent name"
            elif not all(isinstance(v, str) for v in value.values()):
                problem = "every message must be a JSON string"
            else:
                return ReferenceMessages({k: v for k, v in value.items() if k in nbs},
                                         [k for k in value if k not in nbs])
        start = body.find("{", start + 1)
    raise MessageFormatError(problem)


def reference_parse_final_answer(text: str | None, options: list[str]) -> str:
    """The option read after the first marker that some option follows (list order, no boundary)."""
    if text and options:
        pattern = re.escape(FINAL_MARKER) + r"\s*(" + "|".join(re.escape(o) for o in options) + ")"
        found = re.search(pattern, text)
        if found:
            return found.group(1)
    raise ValueError(f"no '{FINAL_MARKER}' followed by one of: {', '.join(options)}")
