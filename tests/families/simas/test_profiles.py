"""Profile replies: valid, malformed, duplicated; the pool gives distinct triples."""

from __future__ import annotations

import json

import pytest

from masgrid.families.simas.profiles import ProfileFormatError, parse_profiles, pool_profiles


def good(n: int) -> list[dict[str, str]]:
    return [{"personality": f"P{i}", "belief": f"B{i}", "expertise": f"E{i}"} for i in range(n)]


def test_valid_reply_with_prose_around_it() -> None:
    text = "Here they are:\n" + json.dumps(good(3)) + "\nGood luck!"
    profiles = parse_profiles(text, 3)
    assert [p.personality for p in profiles] == ["P0", "P1", "P2"] and {p.source for p in profiles} == {"generated"}


def test_core_beliefs_alias() -> None:
    items = [{"personality": "A", "core_beliefs": "x", "expertise": "y"}]
    assert parse_profiles(json.dumps(items), 1)[0].belief == "x"


@pytest.mark.parametrize(("text", "problem"), [
    ("", "empty"),
    ("no json here", "no JSON list"),
    (json.dumps(good(2)), "exactly 3"),
    (json.dumps([{"personality": "A", "belief": "B"}] * 3), "personality, belief and"),
    (json.dumps([good(1)[0]] * 3), "identical"),
    (json.dumps([{"personality": "A" * 400, "belief": "B", "expertise": "C"}, *good(2)]), "at most"),
])
def test_malformed_replies(text: str, problem: str) -> None:
    with pytest.raises(ProfileFormatError, match=problem):
        parse_profiles(text, 3)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 16, 40])
def test_pool_profiles_distinct_and_seeded(n: int) -> None:
    a = pool_profiles(n, 3)
    assert len({p.triple() for p in a}) == n
    assert [p.triple() for p in a] == [p.triple() for p in pool_profiles(n, 3)]
    if n > 1:
        assert [p.triple() for p in a] != [p.triple() for p in pool_profiles(n, 4)]
