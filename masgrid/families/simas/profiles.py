"""Agent profiles (section 3.3, appendix B.1): a personality, core beliefs and an expertise
per agent, distinct across the agents of a run (Property 4).

Two sources: the model writes them once per run before the discussion
(`simas.profiles=generate`, parsed by `parse_profiles`, one retry, then the pool with a
recorded flag), or they are drawn by seed from masgrid/families/simas/conf/simas/profiles.yaml (`pool`).
"""

from __future__ import annotations

import json
import random
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from masgrid.sdk.resources import conf_cached, read_text

FIELDS = ("personality", "belief", "expertise")
MAX_FIELD_CHARS = 300
_DECODER = json.JSONDecoder()


class Profile(BaseModel):
    personality: str = Field(min_length=1, max_length=MAX_FIELD_CHARS)
    belief: str = Field(min_length=1, max_length=MAX_FIELD_CHARS)
    expertise: str = Field(min_length=1, max_length=MAX_FIELD_CHARS)
    source: str = "pool"  # generated | pool | pool_fallback

    def triple(self) -> tuple[str, str, str]:
        return (self.personality.strip().lower(), self.belief.strip().lower(), self.expertise.strip().lower())


@conf_cached(maxsize=1)
def pool() -> dict[str, list[str]]:
    data = yaml.safe_load(read_text("simas/profiles.yaml"))
    for key in ("personalities", "beliefs", "expertise"):
        if not data.get(key):
            raise ValueError(f"masgrid/families/simas/conf/simas/profiles.yaml lacks {key}")
    return data


def pool_profiles(n: int, seed: int) -> list[Profile]:
    """n distinct profiles drawn by seed (personalities without repetition while they last)."""
    data = pool()
    rng = random.Random(f"simas-profiles:{seed}:{n}")
    people, beliefs, skills = (list(data[k]) for k in ("personalities", "beliefs", "expertise"))
    for items in (people, beliefs, skills):
        rng.shuffle(items)
    out: list[Profile] = []
    seen: set[tuple[str, str, str]] = set()
    i = 0
    while len(out) < n:
        p = Profile(personality=people[i % len(people)], belief=beliefs[(i // len(people) + i) % len(beliefs)],
                    expertise=skills[(i * 7 + i // len(skills)) % len(skills)])
        if p.triple() not in seen:
            seen.add(p.triple())
            out.append(p)
        i += 1
        if i > 100 * (n + 10):  # the pool cannot yield n distinct triples
            raise ValueError(f"masgrid/families/simas/conf/simas/profiles.yaml cannot give {n} distinct profiles")
    return out


class ProfileFormatError(ValueError):
    """Why a profile reply is unusable (shown to the model in its one retry)."""


def parse_profiles(text: str | None, n: int) -> list[Profile]:
    """The first JSON list in a reply holding n distinct {personality, belief, expertise} objects."""
    if not text or not text.strip():
        raise ProfileFormatError("the reply was empty")
    problem = "no JSON list of profiles was found"
    for start in (i for i, c in enumerate(text) if c == "["):
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        except RecursionError:
            raise ProfileFormatError("the JSON is nested too deeply") from None
        if not isinstance(value, list):
            continue
        if len(value) != n:
            problem = f"the list has {len(value)} profiles; exactly {n} are needed"
            continue
        try:
            profiles = [Profile(**_fields(item), source="generated") for item in value]
        except (ValidationError, TypeError) as exc:
            problem = ("every profile must be an object with non-empty text fields personality, belief and "
                       f"expertise (at most {MAX_FIELD_CHARS} characters each)")
            del exc
            continue
        if len({p.triple() for p in profiles}) != n:
            problem = "two profiles are identical; every agent needs a distinct profile"
            continue
        return profiles
    raise ProfileFormatError(problem)


def _fields(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise TypeError("not an object")
    aliases = {"core_belief": "belief", "core_beliefs": "belief", "beliefs": "belief"}
    out = {aliases.get(k, k): v for k, v in item.items()}
    if set(FIELDS) - set(out) or not all(isinstance(out[k], str) for k in FIELDS):
        raise TypeError("missing fields")
    return {k: out[k].strip() for k in FIELDS}
