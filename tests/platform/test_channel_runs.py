"""The channel end to end: all-zero rates change nothing (events, metrics and run ids recorded
before the channel existed), and a `-m` sweep over loss rates on Ray whose rows, events and
report section an independent computation checks."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one
from tests.envs.test_channel import check_against_draw

ROOT = Path(__file__).resolve().parents[2]

#: computed with the code before the channel existed (commit 593fb82): run id, a digest of the
#: events below, and run metrics, for scripted runs of five protocols
RECORDED = [
    ({"task": "sorting", "protocol": "broadcast", "agents": 4, "k": 3, "seed": 3},
     "27e2e3732891e131", "a3877408361ba854", {"success": True, "rounds": 3, "messages_sent": 4, "tokens_comm": 292}),
    ({"task": "sorting", "protocol": "p2p", "agents": 4, "k": 3, "seed": 3},
     "783b781811b09089", "1c522b68fca20f1b", {"success": True, "rounds": 3, "messages_sent": 12, "tokens_comm": 384}),
    ({"task": "sorting", "protocol": "kv", "agents": 4, "k": 3, "seed": 3},
     "d36a6244753dd4fb", "0f1abb9f9c544a6f", {"success": True, "rounds": 3, "messages_sent": 4, "tokens_comm": 340}),
    ({"task": "agentsnet/coloring", "protocol": "local", "agents": 5, "graph": "ba", "seed": 2},
     "3f112b2c4bb682f0", "6936fb4a16ccbc09", {"success": True, "rounds": 6, "messages_sent": 60, "tokens_comm": 1525}),
    ({"task": "simas/mmlu", "agents": 3, "seed": 1, "simas": {"subject": "college_physics", "question": 2, "rounds": 2}},
     "a1f8bd845d8b8a51", "67806b076cb8a352", {"success": True, "rounds": 4, "messages_sent": 6, "tokens_comm": 114}),
]
DIGESTED = ["seq", "phase", "round", "agent", "kind", "verb", "text", "reply", "ok", "tokens_comm", "messages_sent",
            "peers", "role", "source"]
DEFAULT_RUN_ID = "81f20f3ca0551d4f"  # RunConfig.from_mapping({}).run_id before the channel existed


def events_digest(events: pd.DataFrame) -> str:
    rows = [[None if (isinstance(v, float) and v != v) else (list(v) if hasattr(v, "tolist") and not isinstance(v, str)
                                                              else v) for v in r]
            for r in events.sort_values("seq")[DIGESTED].itertuples(index=False)]
    return hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()[:16]


def test_default_run_id_is_unchanged() -> None:
    assert RunConfig.from_mapping({}).run_id == DEFAULT_RUN_ID
    zero = {"loss": 0, "delay": 0, "duplicate": 0, "reorder": 0, "delay_rounds": 3, "links": {"0->1": {"loss": 0}}}
    assert RunConfig.from_mapping({"channel": zero}).run_id == DEFAULT_RUN_ID
    assert RunConfig.from_mapping({"channel": {"loss": 0.05}}).run_id != DEFAULT_RUN_ID


@pytest.mark.parametrize("explicit", [False, True])
def test_zero_rates_reproduce_recorded_runs(tmp_path: Path, explicit: bool) -> None:
    for k, (data, run_id, digest, metrics) in enumerate(RECORDED):
        channel = {"channel": {"loss": 0.0, "links": []}} if explicit else {}
        out = tmp_path / str(k)
        cfg = RunConfig.from_mapping({"results_dir": str(out), "execution": {"executor": "local"}, **data, **channel})
        assert cfg.run_id == run_id
        assert run_one(cfg).status == "ok"
        events = pd.read_parquet(out / "events")
        assert events_digest(events) == digest, data["task"]
        assert events[["channel_to", "channel_outcome", "channel_round"]].isna().all().all()
        row = pd.read_parquet(out / "runs").iloc[0]
        assert {key: row[key] for key in metrics} == metrics
        assert all(pd.isna(row[c]) for c in row.index if c.startswith("channel_"))


LOSSES = (0.0, 0.3, 0.7)
PROTOCOLS = ("broadcast", "p2p")
SEEDS = (0, 1)


def test_loss_sweep_on_ray_and_its_report(tmp_path: Path, ray_session) -> None:
    results = tmp_path / "grid"
    env = dict(os.environ, RAY_ADDRESS=ray_session.get_runtime_context().gcs_address, RAY_AUTH_MODE="disabled")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "-m", "task=sorting",
               f"protocol={','.join(PROTOCOLS)}", f"channel.loss={','.join(map(str, LOSSES))}",
               f"seed={','.join(map(str, SEEDS))}", "agents=4", "k=2", "max_rounds=6", f"results_dir={results}",
               "sweep.max_concurrent=2", "sweep.log_every_s=0", "execution.keep_warm=false"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = pd.read_parquet(results / "runs")
    events = pd.read_parquet(results / "events")
    assert len(runs) == len(LOSSES) * len(PROTOCOLS) * len(SEEDS) and set(runs["status"]) == {"ok"}
    for row in runs.itertuples():
        mine = events[events["run_id"] == row.run_id].sort_values("seq")
        config = json.loads(row.config_json)
        loss = config["channel"]["loss"]
        cfg = RunConfig.from_mapping({k: v for k, v in config.items()})
        assert cfg.run_id == row.run_id  # the recorded config gives the recorded id
        if loss == 0:  # no channel at all
            assert pd.isna(row.channel_loss) and pd.isna(row.channel_sent)
            assert mine["channel_to"].isna().all()
            continue
        assert row.channel_loss == loss
        check_against_draw(pd.Series(row._asdict()), mine, {"loss": loss}, row.seed, on_time=0)
        # a lost message was never read: every received sender had a message through
        reached = {(int(ev.agent), int(to)) for ev in mine[mine["channel_to"].notna()].itertuples()
                   for to, outcome in zip(ev.channel_to, ev.channel_outcome) if outcome != "lost"}
        for rec in mine[mine["verb"] == "receive_messages"].itertuples():
            notices = set() if row.protocol == "p2p" else set(rec.peers)  # broadcast: submission notices too
            assert all((s, rec.agent) in reached or s in notices for s in rec.peers)
    assert (runs[runs["channel_loss"] == 0.7]["channel_lost"] > 0).all()

    from masgrid._private.analysis.report import build_report

    files = build_report(results)
    out = results / "report"
    assert out / "channel.md" in files and (out / "channel_success.png").exists()
    assert (out / "channel_success.pdf").exists()
    assert "## Channel" in (out / "README.md").read_text()
    table = pd.read_csv(out / "channel.csv")
    assert len(table) == len(LOSSES) * len(PROTOCOLS)
    for point in table.itertuples():
        part = runs[(runs["protocol"] == point.protocol) & (runs["channel_loss"].fillna(0.0) == point.loss)]
        assert point.runs == len(part) == len(SEEDS)
        assert point.successes == int(part["success"].sum())
        assert point.success_rate == pytest.approx(part["success"].mean())
        assert point.ci_low <= point.success_rate <= point.ci_high
        if point.loss > 0:
            assert point.lost_share == pytest.approx(part["channel_lost"].sum() / part["channel_sent"].sum())


def test_no_channel_section_without_channel_runs(tmp_path: Path) -> None:
    from masgrid._private.analysis.report import build_report

    cfg = RunConfig.from_mapping({"results_dir": str(tmp_path), "execution": {"executor": "local"}, "agents": 3, "k": 2})
    assert run_one(cfg).status == "ok"
    build_report(tmp_path)
    assert not (tmp_path / "report" / "channel.md").exists()
    assert "Channel" not in (tmp_path / "report" / "README.md").read_text()
