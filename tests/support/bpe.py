"""A small byte-level BPE tokenizer trained on the fly and saved as tokenizer.json: a real
model-format tokenizer for tests (no downloads). Training words, numbers below 1000 and the
symbol runs below each become one token when written after a space."""

from __future__ import annotations

import random
from pathlib import Path

WORDS = ["agent", "send", "message", "receive", "messages", "broadcast", "delivered", "list", "files",
         "hold", "values", "sorted", "result", "submit", "from", "here", "wrote", "content"]
#: symbol runs the BPE learns as single tokens, where the estimate counts one per symbol
SYMBOL_RUNS = ["[[", "]]", "],", "):", "=="]


def train_bpe(path: Path) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    rng = random.Random(7)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(30)) for _ in range(400)]
    corpus += [" ".join(str(rng.randrange(1000)) for _ in range(30)) for _ in range(400)]
    corpus += [" " + " ".join(WORDS) + " " + " ".join(map(str, range(1000)))] * 20
    corpus += [" [ ] , : _ - . ( ) = | " + " ".join(SYMBOL_RUNS)] * 50
    trainer = trainers.BpeTrainer(vocab_size=4000, min_frequency=1,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    tok.save(str(path))
    return path
