"""Run status from failed model calls, against the rule written out here from docs/results.md."""

from __future__ import annotations

import random
import subprocess
from collections import Counter
from pathlib import Path

import pandas as pd

from masgrid._private.analysis.usable_runs import exclusion_note, include_invalid, usable
from masgrid._private.platform.run.config import ValiditySettings
from masgrid._private.platform.run.provenance import code_provenance, git_commit
from masgrid._private.platform.run.run_outcome import judge

CLASSES = ["connection_refused", "timeout", "http_4xx", "http_5xx", "malformed_response"]


def test_status_follows_the_documented_rule_on_random_runs():
    rng = random.Random(3)
    for _ in range(2000):
        calls = rng.randint(1, 400)
        errors = rng.choice([0, 0, rng.randint(0, calls)])
        classes = Counter(rng.choice(CLASSES) for _ in range(errors))
        limit = rng.choice([0.0, 0.01, 0.05, 0.2, 1.0])
        status, line = judge(calls, classes, ValiditySettings(max_model_error_rate=limit))
        expected = "ok" if errors == 0 else ("invalid" if errors / calls > limit else "degraded")
        assert status == expected
        if errors:
            assert line.startswith(f"{expected}: {errors} of {calls} model calls failed")
            assert all(f"{cls} x{n}" in line for cls, n in classes.items())
        else:
            assert line is None


def test_tables_use_ok_and_degraded_runs_and_say_what_they_left_out():
    runs = pd.DataFrame({"run_id": list("abcdef"),
                         "status": ["ok", "ok", "degraded", "invalid", "invalid", "failed"]})
    assert list(usable(runs)["run_id"]) == ["a", "b", "c"]
    note = exclusion_note(runs)
    assert note == ("3 of 6 runs used; 3 left out: 1 failed (did not complete), 2 invalid (too many failed "
                    "model calls); 1 degraded runs kept (some model calls failed; see model_error_rate).")
    wide = include_invalid(runs)
    assert list(usable(wide)["run_id"]) == ["a", "b", "c", "d", "e"]
    assert "5 of 6 runs used" in exclusion_note(wide) and "2 invalid runs included on request" in exclusion_note(wide)


def test_provenance_names_the_checkout_commit_and_the_stack():
    root = Path(__file__).resolve().parents[3]
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert git_commit(root).removesuffix("+dirty") == head
    assert git_commit(Path("/")) == "unknown"
    info = code_provenance()
    import ray

    assert info["ray_version"] == ray.__version__ and info["python_version"].count(".") == 2 and info["hostname"]


def test_older_prompt_versions_of_a_point_are_superseded_by_the_newest():
    t = pd.Timestamp("2026-01-01", tz="UTC")
    runs = pd.DataFrame({
        "run_id": list("abcde"), "status": ["ok", "ok", "ok", "invalid", "ok"],
        "point_id": ["p", "p", "q", "r", "r"], "prompt_hash": ["old", "new", "x", "new", "old"],
        "finished_at": [t, t + pd.Timedelta(1, "h"), t, t + pd.Timedelta(2, "h"), t]})
    # p: the newer prompts win; q: alone; r: the newest run is invalid, so its older version
    # is superseded and the point has no usable run (a stale number is never shown instead)
    assert list(usable(runs)["run_id"]) == ["b", "c"]
    assert exclusion_note(runs).startswith("2 of 5 runs used; 3 left out: 1 invalid (too many failed model "
                                           "calls), 2 superseded (recorded with older prompts)")


def test_failures_are_classed_by_whose_fault_they_were():
    import ray.exceptions as rex

    from masgrid._private.platform.run.driver import PromptMismatch
    from masgrid._private.platform.run.ports import RoundTimeout
    from masgrid._private.platform.run.run_outcome import classify_failure

    assert classify_failure(rex.ActorDiedError()) == "interrupted"
    assert classify_failure(rex.WorkerCrashedError()) == "interrupted"
    assert classify_failure(RoundTimeout("hung host")) == "interrupted"
    assert classify_failure(TimeoutError()) == "interrupted"  # a host that never started
    assert classify_failure(PromptMismatch("conf/ edited")) == "config_error"
    assert classify_failure(ValueError("bad instance")) == "task_error"
    # an error raised inside an actor is judged by what was raised there
    assert classify_failure(rex.RayTaskError("step", "tb", ValueError("x"))) == "task_error"
    assert classify_failure(rex.RayTaskError("step", "tb", rex.ActorDiedError())) == "interrupted"
