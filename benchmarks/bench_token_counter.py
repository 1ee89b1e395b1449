"""Cost of counting communication tokens: the approximate counter against a real tokenizer
(execution.token_counter=auto with a model preset's tokenizer.json).

Texts are the command blocks and replies of a scripted MAS-Bench run (what the environment
counts). Without --tokenizer a small BPE is trained on the fly (tests/support/bpe.py); a
model's own tokenizer.json gives the figure that matters for a study.

    PYTHONPATH=. python benchmarks/bench_token_counter.py [--tokenizer /models/X/tokenizer.json]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from masgrid._private.envs.tokens import approx_tokens, get_counter
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local


def texts(tmp: Path) -> list[str]:
    out: list[str] = []
    for protocol in ("broadcast", "p2p", "kv"):
        cfg = RunConfig.from_mapping(dict(task="sorting", protocol=protocol, agents=20, k=10, seed=1,
                                          results_dir=str(tmp / "res"), execution={"executor": "local"}))
        run_local(cfg)
    events = pd.read_parquet(tmp / "res" / "events")
    commands = events[events["kind"] == "command"]
    for block, reply in zip(commands["text"], commands["reply"]):
        out += [block or "", reply or ""]
    return out


def per_text_us(count, items: list[str], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        for text in items:
            count(text)
    return (time.perf_counter() - start) / (repeat * len(items)) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.tokenizer
        if path is None:
            from tests.support.bpe import train_bpe

            path = train_bpe(Path(tmp) / "tokenizer.json")
        items = texts(Path(tmp))
        hf = get_counter(f"hf:{path}")
        chars = sum(map(len, items)) / len(items)
        print(f"{len(items)} texts (commands and replies of 3 scripted runs, N=20 K=10), mean {chars:.0f} chars")
        print(f"approx: {per_text_us(approx_tokens, items, args.repeat):.1f} us/text, "
              f"{sum(map(approx_tokens, items))} tokens")
        print(f"hf ({path.name}): {per_text_us(hf, items, args.repeat):.1f} us/text, {sum(map(hf, items))} tokens")


if __name__ == "__main__":
    main()
