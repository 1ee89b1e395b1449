"""`masgrid instance` and `masgrid score`, as a user runs them (real subprocesses)."""

import json
import subprocess
import sys

import pytest


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("task", ["sorting", "max", "prefix_sum"])
def test_instance_then_score_round_trip(tmp_path, task):
    out = cli("instance", task, "agents=3", "k=4", "mode=near_desc", "seed=9", "--json")
    assert out.returncode == 0, out.stderr
    inst = json.loads(out.stdout)
    assert inst["params"] == {"agents": 3, "k": 4, "mode": "near_desc", "seed": 9}
    assert len(inst["inputs"]) == len(inst["expected"]) == 3
    (tmp_path / "inst.json").write_text(out.stdout)

    answers = list(inst["expected"])
    answers[2] = None
    (tmp_path / "ans.json").write_text(json.dumps(answers))
    out = cli("score", task, "--instance", str(tmp_path / "inst.json"), "--answers", str(tmp_path / "ans.json"),
              "--json")
    assert out.returncode == 0, out.stderr
    score = json.loads(out.stdout)
    assert score["success"] is False and score["correct"] == [True, True, False]
    assert score["metrics"]["sr"] == pytest.approx(2 / 3)


def test_score_accepts_agent_keyed_answers_and_reports_invalid_ones(tmp_path):
    inst = json.loads(cli("instance", "sorting", "agents=2", "k=2").stdout)
    (tmp_path / "inst.json").write_text(json.dumps(inst))
    (tmp_path / "ans.json").write_text(json.dumps({"Agent-0": inst["expected"][0], "1": "[1, 2, 3]"}))
    out = cli("score", "sorting", "--instance", str(tmp_path / "inst.json"), "--answers", str(tmp_path / "ans.json"))
    score = json.loads(out.stdout)
    assert score["correct"] == [True, False]
    assert "expected exactly 2 integers" in score["invalid_answers"]["1"]


def test_instance_takes_a_familys_top_level_key_either_way_and_another_familys_as_masgrid_run_does():
    plain, dotted = cli("instance", "sorting", "agents=2", "mode=desc"), cli("instance", "sorting", "agents=2",
                                                                             "masbench.mode=desc")
    assert plain.returncode == dotted.returncode == 0 and plain.stdout == dotted.stdout
    assert json.loads(plain.stdout)["params"]["mode"] == "desc"
    silo = cli("instance", "silo/I-01", "agents=2", "mode=desc")  # MAS-Bench's key, which SILO ignores
    assert silo.returncode == 0 and silo.stdout == cli("instance", "silo/I-01", "agents=2").stdout


def test_instance_errors_are_clear():
    out = cli("instance", "sorting", "mode=sideways")
    assert out.returncode == 2 and "mode" in out.stderr
    out = cli("instance", "no_such_task")
    assert out.returncode == 2 and "unknown task" in out.stderr


def test_score_refuses_an_instance_of_another_task(tmp_path):
    inst = cli("instance", "sorting", "agents=2", "k=2").stdout
    (tmp_path / "inst.json").write_text(inst)
    (tmp_path / "ans.json").write_text(json.dumps(json.loads(inst)["expected"]))
    out = cli("score", "max", "--instance", str(tmp_path / "inst.json"), "--answers", str(tmp_path / "ans.json"))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == f"masgrid score: {tmp_path / 'inst.json'} is an instance of task sorting, not max"


def one_line_error(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr + out.stdout
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_sweep_flags_anywhere_and_cfg_job_prints_every_job(tmp_path):
    out = cli("run", "agents=1,2", "-m", "seed=4", "--cfg", "job", f"results_dir={tmp_path}")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    jobs = out.stdout.split("# job ")[1:]
    assert [j.splitlines()[0] for j in jobs] == [f"0: agents=1 seed=4 results_dir={tmp_path}",
                                                 f"1: agents=2 seed=4 results_dir={tmp_path}"]
    assert "agents: 2\n" in jobs[1] and "seed: 4\n" in jobs[1]
    assert not (tmp_path / "runs").exists() and not (tmp_path / ".multirun").exists()
    assert one_line_error(cli("run", "-m", "agents=1,2", "--cfg", "hydra")).startswith("masgrid run: with -m, only")


def test_a_model_setting_the_preset_does_not_list_needs_no_plus(tmp_path):
    """`model.max_connections` and `model.cache` are documented settings; presets list only
    some of the model's fields, and Hydra refuses others without `+`. A real model field
    is accepted as written, a misspelt one is still refused."""
    out = cli("run", "model=local_vllm", "model.max_connections=7", "model.cache=true", "--cfg", "job",
              f"results_dir={tmp_path}")
    assert out.returncode == 0, out.stderr
    assert "  max_connections: 7\n" in out.stdout and "  cache: true\n" in out.stdout
    out = cli("run", "-m", "model=local_vllm", "seed=0,1", "model.max_connections=7", "--cfg", "job",
              f"results_dir={tmp_path}")
    assert out.returncode == 0 and out.stdout.count("  max_connections: 7\n") == 2, out.stderr
    bad = cli("run", "model.max_conections=7", "--cfg", "job", f"results_dir={tmp_path}")
    assert bad.returncode != 0 and "max_conections" in bad.stderr + bad.stdout


@pytest.mark.parametrize(("args", "expected"), [
    (["-m", "agents=range(1,1)"], "masgrid run: the sweep expands to no job"),
    (["-m", "model=local_vllm", "backend=openai", "model.base_url=http://a:1/v1,http://b:1/v1"],
     "masgrid run: the sweep varies model.base_url, which is not part of a run's identity"),
    (["-m", "agents=1,2", "execution.agents_per_actor=1,2", "preflight=true,false"],
     "masgrid run: the sweep varies execution.agents_per_actor, preflight, which is not part"),
    (["-m", "agents=1,2", "sweep.max_concurrent=1,2"], "masgrid run: the sweep varies sweep.max_concurrent"),
    (["-sc", "install=bash"], "masgrid run: shell completion is not supported"),
])
def test_bad_command_lines_get_one_line_and_exit_2(tmp_path, args, expected):
    line = one_line_error(cli("run", *args, f"results_dir={tmp_path / 'r'}"))
    assert line.startswith(expected), line
    assert not (tmp_path / "r").exists()  # refused before anything is written, .multirun/ included


def test_an_invalid_job_is_refused_before_anything_is_written(tmp_path):
    out = cli("run", "-m", "agents=0,1", "sweep.max_concurrent=1", f"results_dir={tmp_path / 'r'}")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("1 job(s) of the sweep have an invalid configuration; nothing was run:")
    assert "agents: Input should be greater than or equal to 1" in out.stderr
    assert not (tmp_path / "r").exists()


def test_a_sweep_refused_as_busy_leaves_the_holders_sweep_record_alone(tmp_path):
    from masgrid._private.platform.results.results_lock import ResultsLock

    record = tmp_path / ".multirun" / "multirun.yaml"
    record.parent.mkdir()
    record.write_text("the sweep that holds this results_dir\n")
    lock = ResultsLock(tmp_path)
    lock.acquire()
    try:
        line = one_line_error(cli("run", "-m", "agents=1,2", "k=1", f"results_dir={tmp_path}"))
    finally:
        lock.release()
    assert "is being written by another masgrid process" in line
    assert record.read_text() == "the sweep that holds this results_dir\n"


@pytest.mark.parametrize("multirun", [False, True])
def test_unwritable_results_dir_and_missing_parent_are_one_line(tmp_path, multirun):
    (tmp_path / "afile").write_text("")
    for bad, why in ((tmp_path / "afile", "not a directory"),
                     (tmp_path / "afile" / "missing" / "x", f"its parent directory {tmp_path / 'afile' / 'missing'} "
                                                            "does not exist (create it first)"),
                     (tmp_path / "typo" / "results", f"its parent directory {tmp_path / 'typo'} does not exist "
                                                     "(create it first)")):
        out = cli("run", *(["-m", "agents=1,2"] if multirun else []), "k=1", f"results_dir={bad}")
        assert one_line_error(out) == f"masgrid run: results_dir {bad}: {why}"
        assert not (tmp_path / "typo").exists()  # not a fresh sweep


def test_help_does_not_advertise_shell_completion():
    for flag in ("--help", "--hydra-help"):
        out = cli("run", flag)
        assert out.returncode == 0 and "masgrid run" in out.stdout
        assert "-sc install" not in out.stdout and "--shell-completion" not in out.stdout


def test_plain_sweep_with_m_last_runs_without_the_token_auth_warning(tmp_path):
    import os

    import pyarrow.dataset as ds

    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
    out = subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "agents=1,2", "k=1",
                          f"results_dir={tmp_path}", "sweep.progress=plain", "-m"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert "Token authentication" not in out.stderr + out.stdout
    assert "2 runs in the grid" in out.stdout
    runs = ds.dataset(tmp_path / "runs", partitioning="hive").to_table().to_pylist()
    assert sorted(r["agents"] for r in runs) == [1, 2] and {r["status"] for r in runs} == {"ok"}
    assert "- agents=1,2\n" in (tmp_path / ".multirun" / "multirun.yaml").read_text()  # the sweep that ran
