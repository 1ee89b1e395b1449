import hashlib
import random
import re
import sys

import pytest
from cachetools import LRUCache

from masgrid._private.envs import tokens
from masgrid._private.envs.tokens import CounterChoice, approx_tokens, check_spec, get_counter, resolve_counter, tokenizer_file
from tests.support.bpe import SYMBOL_RUNS, WORDS, train_bpe


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


# --- real tokenizers: a byte-level BPE trained here, saved as tokenizer.json ----------------


#: how the byte-level pre-tokenizer cuts text (letter runs, digit runs, other symbols, each with
#: an optional leading space); the test's own statement of that rule
PIECE = re.compile(r" ?[A-Za-z]+| ?\d+| ?[^\sA-Za-z\d]+|\s+(?!\S)|\s+")


@pytest.fixture(scope="module")
def bpe_file(tmp_path_factory):
    return train_bpe(tmp_path_factory.mktemp("tok") / "tokenizer.json")


def independent_count(text: str) -> int:
    """Tokens of text made of training words, numbers below 1000 and single symbols: one per piece."""
    return len(PIECE.findall(text))


def random_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 25)):
        kind = rng.random()
        parts.append(rng.choice(WORDS) if kind < 0.5 else str(rng.randrange(1000)) if kind < 0.8 else
                     rng.choice(list("[],:.()=|") + SYMBOL_RUNS))
    return "".join(" " + p for p in parts)  # every piece space-led, as in training


def test_hf_counter_counts_in_the_tokenizer_units_on_random_texts(bpe_file):
    count = get_counter(f"hf:{bpe_file}")
    rng = random.Random(1)
    texts = [random_text(rng) for _ in range(300)]
    assert [count(t) for t in texts] == [independent_count(t) for t in texts]
    assert count("") == 0
    # a real tokenizer, not the estimate: symbol runs are one token here, one per symbol there
    assert sum(count(t) for t in texts) < sum(approx_tokens(t) for t in texts)


def test_auto_takes_the_model_tokenizer_and_records_it(bpe_file):
    choice = resolve_counter("auto", f"hf:{bpe_file}", "m")
    assert choice == CounterChoice(spec=f"hf:{bpe_file}", source="model preset",
                                   sha256=hashlib.sha256(bpe_file.read_bytes()).hexdigest())
    assert not choice.approximate


def test_auto_falls_back_to_approx_only_when_nothing_else_is_there_and_says_why(tmp_path):
    none = resolve_counter("auto", None, "scripted")
    assert none.approximate and none.source == "fallback: model preset 'scripted' names no tokenizer"
    missing = resolve_counter("auto", f"hf:{tmp_path}/nope/tokenizer.json", "m")
    assert missing.approximate and missing.source.startswith("fallback: ") and "no tokenizer file" in missing.source
    assert missing.sha256 is None
    assert resolve_counter("approx", f"hf:{tmp_path}/x.json", "m") == CounterChoice(spec="approx", source="requested")


def test_requested_tokenizer_that_cannot_load_is_a_one_line_error(tmp_path):
    with pytest.raises(ValueError, match="no tokenizer file at") as err:
        resolve_counter(f"hf:{tmp_path}/missing.json", None, "m")
    assert "\n" not in str(err.value)
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="is not a tokenizers tokenizer.json") as err:
        get_counter(f"hf:{bad}")
    assert "\n" not in str(err.value)
    for spec in ("bpe", "hf:", "hf-package:", "tiktoken:o200k"):
        with pytest.raises(ValueError, match="unknown token counter"):
            check_spec(spec)
    with pytest.raises(ValueError, match="unknown token counter"):
        check_spec("auto", allow_auto=False)


def test_tokenizer_shipped_in_a_package(bpe_file, tmp_path, monkeypatch):
    package = tmp_path / "site" / "tokpkg"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "data" / "tokenizer.json").write_bytes(bpe_file.read_bytes())
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = "hf-package:tokpkg/data/tokenizer.json"
    assert tokenizer_file(spec) == package / "data" / "tokenizer.json"
    assert get_counter(spec)(" send 12 [ 3") == independent_count(" send 12 [ 3") == 4
    with pytest.raises(ValueError, match="not installed"):
        tokenizer_file("hf-package:no_such_pkg_xyz/tokenizer.json")
    sys.modules.pop("tokpkg", None)
