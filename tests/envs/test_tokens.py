import pytest

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
