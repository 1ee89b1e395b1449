"""The report says which runs' communication tokens (and CR) are estimates."""

from __future__ import annotations

import random

import pandas as pd

from masgrid._private.analysis.report import build_report
from masgrid._private.analysis.token_units import approximate_token_note
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from tests.support.bpe import train_bpe


def test_note_counts_the_approximate_runs_on_random_tables():
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(0, 12)
        counters = [rng.choice(["approx", "hf:/m/tokenizer.json", None]) for _ in range(n)]
        backends = [rng.choice(["scripted", "openai", "serve"]) for _ in range(n)]
        runs = pd.DataFrame({"token_counter": counters, "backend": backends})
        approx = [c in ("approx", None) for c in counters]  # a missing value: an older row, counted as estimated
        note = approximate_token_note(runs)
        if not any(approx):
            assert note == ""
            continue
        assert note.startswith(f"{sum(approx)} of {n} runs counted communication tokens with the approximate")
        with_model = sum(a and b != "scripted" for a, b in zip(approx, backends))
        assert (f"{with_model} of them called a model" in note) == (with_model > 0)
    assert approximate_token_note(pd.DataFrame()) == ""


def test_report_flags_estimated_cr(tmp_path):
    tok = train_bpe(tmp_path / "tokenizer.json")
    root = tmp_path / "results"
    for seed, model in ((0, {"name": "scripted"}), (1, {"name": "scripted", "tokenizer": f"hf:{tok}"})):
        cfg = RunConfig.from_mapping(dict(task="sorting", agents=2, k=2, seed=seed, results_dir=str(root),
                                          model=model, execution={"executor": "local"}))
        assert run_local(cfg).status == "ok"
    build_report(root, tmp_path / "report")
    text = (tmp_path / "report" / "masbench" / "README.md").read_text()
    assert "1 of 2 runs counted communication tokens with the approximate counter" in text
    assert "table1.md" in text and "approximate counter" in (tmp_path / "report" / "masbench" / "table1.md").read_text()
