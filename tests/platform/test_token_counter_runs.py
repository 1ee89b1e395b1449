"""A run on real Ray actors counts communication tokens with the model preset's tokenizer
(execution.token_counter=auto) and records which counter it used (docs/models.md)."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from masgrid._private.envs.tokens import approx_tokens
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one
from tests.support.bpe import train_bpe

#: communication commands (docs/tasks/masbench.md, "Communication tokens"), written out here
COMMUNICATION = {"broadcast": {"broadcast_message", "receive_messages", "list_agents"},
                 "p2p": {"send_message", "receive_messages"},
                 "kv": {"list_files", "read_file", "write_file", "delete_file"}}


@pytest.mark.parametrize("protocol", ["kv", "p2p"])
def test_run_counts_communication_tokens_with_the_presets_tokenizer(tmp_path, ray_session, protocol):
    from tokenizers import Tokenizer

    path = train_bpe(tmp_path / "tokenizer.json")
    cfg = RunConfig.from_mapping(dict(task="sorting", protocol=protocol, agents=3, k=4, seed=5,
                                      results_dir=str(tmp_path / "res"),
                                      model={"name": "scripted", "tokenizer": f"hf:{path}"}))
    assert cfg.execution.token_counter == "auto"
    summary = run_one(cfg)
    assert summary.status == "ok"
    run = pd.read_parquet(tmp_path / "res" / "runs").iloc[0]
    assert run["token_counter"] == f"hf:{path}" and run["token_counter_source"] == "model preset"
    assert run["tokenizer_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert json.loads(run["config_json"])["model"]["tokenizer"] == f"hf:{path}"

    tok = Tokenizer.from_file(str(path))  # counted here without masgrid's counter

    def count(text: str | None) -> int:
        return len(tok.encode(text, add_special_tokens=False).ids) if text else 0

    events = pd.read_parquet(tmp_path / "res" / "events")
    commands = events[events["kind"] == "command"]
    comm = commands[commands["verb"].isin(COMMUNICATION[protocol])]
    assert len(comm) > 0
    expected = [count(t) + count(r) for t, r in zip(comm["text"], comm["reply"])]
    assert comm["tokens_comm"].tolist() == expected
    assert (commands[~commands["verb"].isin(COMMUNICATION[protocol])]["tokens_comm"] == 0).all()
    assert run["tokens_comm"] == sum(expected)
    # in the tokenizer's units, not the estimate's
    assert sum(expected) != sum(approx_tokens(t) + approx_tokens(r or "") for t, r in zip(comm["text"], comm["reply"]))


def test_run_without_a_model_tokenizer_records_the_approx_fallback(tmp_path, ray_session):
    cfg = RunConfig.from_mapping(dict(task="max", protocol="broadcast", agents=2, k=2, seed=1,
                                      results_dir=str(tmp_path / "res")))
    assert run_one(cfg).status == "ok"
    run = pd.read_parquet(tmp_path / "res" / "runs").iloc[0]
    assert run["token_counter"] == "approx" and pd.isna(run["tokenizer_sha256"])
    assert run["token_counter_source"] == "fallback: model preset 'scripted' names no tokenizer"


def test_run_with_a_requested_tokenizer_that_is_missing_fails_with_the_reason(tmp_path, ray_session):
    cfg = RunConfig.from_mapping(dict(task="max", protocol="broadcast", agents=2, k=2, seed=1,
                                      results_dir=str(tmp_path / "res"),
                                      execution={"token_counter": f"hf:{tmp_path}/missing/tokenizer.json"}))
    summary = run_one(cfg)
    assert summary.status == "failed" and "no tokenizer file at" in (summary.error or "")
    run = pd.read_parquet(tmp_path / "res" / "runs").iloc[0]
    assert run["status"] == "failed" and run["token_counter_source"].startswith("error: ")
