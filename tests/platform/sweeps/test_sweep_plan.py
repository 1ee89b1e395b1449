"""Sweep planning against recorded results (no Ray) and grid validation through Hydra."""

from __future__ import annotations

import copy
import json

from pathlib import Path

import pytest

from masgrid._private.platform.run.config import ConfigError, RunConfig
from masgrid._private.platform.results.recorder import Recorder
from masgrid._private.platform.sweeps.sweep import SweepSettings, plan_sweep, split_job_config


def _grid(results_dir: Path) -> list[RunConfig]:
    return [RunConfig(protocol=p, agents=n, k=1, seed=0, results_dir=str(results_dir))
            for p in ("broadcast", "kv") for n in (1, 2)]


def _record(cfg: RunConfig, status: str, error_class: str | None = None) -> None:
    row = {**cfg.columns(), "status": status, "error": None if status == "ok" else "RuntimeError: boom",
           "error_class": error_class}
    Recorder(cfg.results_dir).finish_run(row, [], cfg.partition)


def test_a_plain_resume_reruns_interrupted_runs_but_not_own_failures(tmp_path):
    grid = _grid(tmp_path)
    for cfg, cls in zip(grid, ("interrupted", "task_error", "config_error", None)):  # None: rows from before
        _record(cfg, "failed", cls)
    plan = plan_sweep(grid)
    assert [c.run_id for c in plan.todo] == [grid[0].run_id]
    assert (plan.skipped_failed, plan.retried, plan.interrupted) == (3, 1, 1)
    every = plan_sweep(grid, retry_failed=True)
    assert len(every.todo) == 4 and every.interrupted == 1
    assert Recorder(tmp_path).run_outcomes()[grid[1].run_id] == ("failed", "task_error")


def test_plan_skips_ok_and_leaves_failed_unless_asked(tmp_path):
    grid = _grid(tmp_path)
    assert len(plan_sweep(grid).todo) == 4  # nothing recorded yet (and no folder is created)
    assert not (tmp_path / "runs").exists()
    _record(grid[0], "ok")
    _record(grid[1], "failed")
    plan = plan_sweep(grid)
    assert [c.run_id for c in plan.todo] == [grid[2].run_id, grid[3].run_id]
    assert (plan.skipped_ok, plan.skipped_failed, plan.retried) == (1, 1, 0)
    retry = plan_sweep(grid, retry_failed=True)
    assert [c.run_id for c in retry.todo] == [grid[1].run_id, grid[2].run_id, grid[3].run_id]
    assert (retry.skipped_ok, retry.skipped_failed, retry.retried) == (1, 0, 1)


def test_a_resume_keeps_ok_and_degraded_runs_and_redoes_invalid_ones(tmp_path):
    grid = _grid(tmp_path)
    for cfg, status in zip(grid, ("ok", "degraded", "invalid", "failed")):
        _record(cfg, status)
    plan = plan_sweep(grid)
    assert [c.run_id for c in plan.todo] == [grid[2].run_id]  # the endpoint may be back
    assert (plan.skipped_ok, plan.skipped_failed, plan.retried) == (2, 1, 1)
    kept = plan_sweep(grid, retry_invalid=False)
    assert kept.todo == [] and kept.skipped_ok == 3


def test_identity_ignores_execution_and_results_dir_but_not_seed(tmp_path):
    a = RunConfig(results_dir=str(tmp_path / "x"))
    b = RunConfig(results_dir=str(tmp_path / "y"), execution={"agents_per_actor": 3})
    assert a.run_id == b.run_id
    plan = plan_sweep([a, a.model_copy(), RunConfig(seed=1, results_dir=str(tmp_path / "x"))])
    assert (plan.total, plan.duplicates, len(plan.todo)) == (2, 1, 2)


def test_split_job_config_strips_sweep_node_and_reports_both_layers():
    cfg, settings = split_job_config({"agents": 3, "sweep": {"max_concurrent": 7, "retry_failed": True}})
    assert (cfg.agents, settings.max_concurrent, settings.retry_failed) == (3, 7, True)
    assert split_job_config({"agents": 3})[1] == SweepSettings()
    with pytest.raises(ConfigError) as err:
        split_job_config({"agents": 0, "sweep": {"max_concurrent": 0}})
    assert "sweep.max_concurrent" in str(err.value) and "agents:" in str(err.value)


def test_invalid_grid_is_rejected_before_anything_runs(tmp_path, capsys):
    from masgrid._private.platform.commands.cli import main

    rc = main(["run", "-m", "protocol=broadcast,nope", "agents=1,2", f"results_dir={tmp_path}",
               "sweep.progress=off"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "2 job(s) of the sweep have an invalid configuration" in err
    assert "protocol: unknown protocol 'nope'" in err
    assert not (tmp_path / "runs").exists() and not (tmp_path / ".multirun").exists()


def _sweep_values(key: str, value: str) -> list:
    """A sweeper value as the basic sweeper expands it, with Hydra's own override parser
    (`range(a,b)`, comma lists, lists as values: `[1,2],[1,3]`)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    override = OverridesParser.create().parse_overrides([f"{key}={value}"])[0]
    return list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]


def _paper_sized_simas_data(root: Path) -> Path:
    """The SIMAS datasets in their public layouts with the paper's sizes (17 questions per
    subject, 30 AIME problems), so the grid presets validate without the real data."""
    import shutil

    from masgrid.families.simas.datasets import PAPER_SUBJECTS, default_data_dir

    shutil.copytree(default_data_dir(), root)
    for subject in PAPER_SUBJECTS:
        rows = [f'"Question {i}?",a,b,c,d,{"ABCD"[i % 4]}' for i in range(17)]
        (root / "mmlu" / "test" / f"{subject}_test.csv").write_text("\n".join(rows) + "\n")
    ekar = [{"id": str(i), "question": "a : b", "choices": {"label": list("ABCD"), "text": list("wxyz")},
             "answerKey": "A"} for i in range(17)]
    (root / "ekar" / "validation.json").write_text(json.dumps(ekar))
    (root / "aime2025" / "aime2025.jsonl").write_text(
        "".join(json.dumps({"problem": f"p{i}", "answer": str(i)}) + "\n" for i in range(30)))
    return root


def test_sweep_presets_compose_and_validate(tmp_path: Path):
    """Every preset under conf/sweep/ expands to a grid of valid run configs (no Ray)."""
    import itertools

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from masgrid._private.resources import conf_dir, conf_file, conf_files

    presets = sorted(p.stem for _, p in conf_files("sweep") if p.suffix == ".yaml")  # every family's
    assert "masbench" in presets and "simas" in presets
    simas_data = _paper_sized_simas_data(tmp_path / "simas")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        for name in presets:
            cfg = compose("config", overrides=[f"sweep={name}"], return_hydra_config=True)
            params = {k: _sweep_values(k, str(v)) for k, v in cfg.hydra.sweeper.params.items()}
            base = OmegaConf.to_container(cfg, resolve=False)
            base.pop("hydra")
            sizes = [len(v) for v in params.values()]
            combos = list(itertools.product(*params.values()))
            assert len(combos) == __import__("math").prod(sizes)
            for combo in combos[:: max(1, len(combos) // 50)]:  # a spread sample of the grid
                data = copy.deepcopy(base)
                for key, value in zip(params, combo):  # dotted keys (agentsnet.byzantine) nest
                    if key == "model":  # a config group: the value names conf/model/<value>.yaml
                        data["model"] = OmegaConf.to_container(OmegaConf.load(conf_file(f"model/{value}.yaml")))
                        continue
                    *parents, leaf = key.split(".")
                    node = data
                    for part in parents:
                        node = node.setdefault(part, {})
                    node[leaf] = value
                if str(data.get("task", "")).startswith("simas/"):
                    data.setdefault("simas", {})["data_dir"] = str(simas_data)
                split_job_config(data)
            if name == "masbench":
                assert sizes == [1, 3, 5, 3, 5, 4, 3]  # task, protocol, N, K, family, condition, seeds
            if name == "simas":
                assert len(combos) == 6 * 8 * 17 * 3  # subjects x n x questions x repeats (section 4.1)


def test_progress_plain_lines_and_rich_bar(capsys):
    import io

    from rich.console import Console

    from masgrid._private.platform.sweeps.progress import SweepProgress

    plain = SweepProgress(5, "plain", log_every_s=3600)
    plain.start()
    for status in ("ok", "failed", "degraded", "invalid", "ok"):
        plain.advance(status=status)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2  # the first line, then rate-limited until the last one
    assert lines[-1].startswith("[sweep] 5/5 done, 1 degraded, 1 invalid, 1 failed") and "eta 0:00:00" in lines[-1]

    buf = io.StringIO()
    bar = SweepProgress(2, "auto", console=Console(file=buf, force_terminal=True, width=120))
    assert bar.mode == "rich"
    bar.start()
    bar.advance(failed=True)
    bar.advance(status="degraded")
    bar.stop()
    assert "2/2" in buf.getvalue() and "1 failed" in buf.getvalue() and "1 degraded" in buf.getvalue()


def test_plain_eta_is_measured_from_the_first_completion_not_from_start_up():
    from masgrid._private.platform.sweeps.progress import SweepProgress

    now = [0.0]
    progress = SweepProgress(10, "plain", clock=lambda: now[0])
    progress.start()
    now[0] = 60.0  # Ray, the pool and the first drivers took a minute to start
    progress.advance()
    assert progress.line().endswith("? runs/min, elapsed 0:01:00, eta ?")  # one point is no rate
    now[0] = 62.0
    progress.advance()  # then a run every 2 s: 8 left -> 16 s
    assert progress.line() == "[sweep] 2/10 done, 0 degraded, 0 invalid, 0 failed, 30.0 runs/min, elapsed 0:01:02, eta 0:00:16"


def test_the_launcher_answers_the_call_that_started_it_not_a_module_mailbox():
    """`masgrid run -m` makes its SweepCall current while Hydra runs; outside such a block (Hydra
    started by other code) the launcher gets a fresh call, and calls in other threads or nested
    blocks never see each other's outcome."""
    import threading

    from masgrid._private.platform.sweeps.sweep import SweepCall, SweepResult, current_sweep_call, sweep_call

    mine = SweepCall(show_config="job")
    with current_sweep_call(mine):
        assert sweep_call() is mine
        sweep_call().result = SweepResult(total=3, failed=1)
        seen_elsewhere: list[SweepCall] = []
        thread = threading.Thread(target=lambda: seen_elsewhere.append(sweep_call()))
        thread.start()
        thread.join()
        assert seen_elsewhere[0] is not mine and seen_elsewhere[0].result is None
        inner = SweepCall()
        with current_sweep_call(inner):
            assert sweep_call() is inner
        assert sweep_call() is mine
    fresh = sweep_call()
    assert fresh is not mine and fresh.result is None and fresh.show_config is None
    assert mine.result is not None and mine.result.exit_code == 1
