import pytest
from cachetools import LRUCache

from masgrid.envs import tokens
from masgrid.envs.tokens import approx_tokens, get_counter


def test_approx_counter_splits_words_digit_groups_and_symbols():
    assert approx_tokens("") == 0
    assert approx_tokens("hello world") == 2
    assert approx_tokens("[1234567, 8]") == 1 + 3 + 1 + 1 + 1  # '[', 123 456 7, ',', 8, ']'
    assert approx_tokens("send_message 3 hi") == 5


def test_counter_specs():
    assert get_counter("approx") is approx_tokens
    with pytest.raises(ValueError, match="unknown token counter"):
        get_counter("bpe-magic")


def test_long_texts_are_counted_once_and_the_cache_stays_within_its_budget(monkeypatch):
    text = "Agent 7 holds 101, 202 and 303; who has the smallest? " * 20
    counted: list[str] = []
    real = tokens._pieces
    monkeypatch.setattr(tokens, "_pieces", lambda t: counted.append(t) or real(t))
    first = approx_tokens(text)
    again = approx_tokens("".join(list(text)))  # an equal text in a new string object
    assert first == again == real(text) and len(counted) <= 1  # counted at most once (maybe cached earlier)
    short = "a short line, 12 345"
    assert approx_tokens(short) == real(short) and counted[-1] == short  # short texts are not cached

    monkeypatch.setattr(tokens, "_COUNTS", LRUCache(maxsize=3000, getsizeof=lambda entry: entry[1]))
    monkeypatch.setattr(tokens, "CACHE_CHARS", 3000)
    texts = [f"{i} " + "word " * 200 for i in range(5)]  # about 1000 characters each
    assert [approx_tokens(t) for t in texts] == [real(t) for t in texts]
    assert tokens._COUNTS.currsize <= 3000 and texts[-1] in tokens._COUNTS and texts[0] not in tokens._COUNTS
    huge = "x " * 2000  # over the whole budget: counted, never kept
    assert approx_tokens(huge) == 2000 and huge not in tokens._COUNTS
