"""Fast sweep composition equals Hydra's full per-job composition (masgrid._private.platform.sweeps.compose)."""

from __future__ import annotations

import pytest

from masgrid._private.platform.sweeps.compose import multirun_jobs


def _sample(jobs: list[list[str]], n: int) -> list[list[str]]:
    step = max(1, len(jobs) // n)
    return jobs[::step][:n] + [jobs[-1]]


@pytest.mark.parametrize(("overrides", "path", "sample"), [
    (["sweep=masbench"], "dict", 30),
    (["sweep=silo"], "dict", 20),
    (["sweep=agentsnet"], "dict", 20),
    (["sweep=agentsnet_byzantine"], "dict", 10),  # a dotted key: agentsnet.byzantine
    (["sweep=silo_ablation"], "dict", 10),
    # two model presets (two group choices; gpt_oss_120b interpolates ${oc.env:...})
    (["sweep=masbench_smoke", "model=local_vllm,gpt_oss_120b", "backend=openai", "seed=5"], "dict", 12),
    # an append into the chosen group, a force-add and a dict value: Hydra's own override code
    (["sweep=masbench_smoke", "model=local_vllm,deepseek_v31", "++model.max_tokens=9",
      "++execution.round_timeout_s=3", "agentsnet={rounds: 4}"], "omegaconf", 8),
])
def test_fast_composition_equals_full_composition(overrides, path, sample):
    composer, jobs = multirun_jobs(overrides)
    assert jobs
    picked = _sample(jobs, sample)
    fast = [composer.compose(job, i)[1] for i, job in enumerate(picked)]
    assert composer.paths == {path: len(picked)}  # the fast path was taken, for every job
    full = [composer.full(job, i)[1] for i, job in enumerate(picked)]
    assert fast == full
    assert len({str(d) for d in fast}) == len({tuple(j) for j in picked})  # the jobs really differ


def test_masbench_composes_once_per_group_choice():
    composer, jobs = multirun_jobs(["sweep=masbench", "model=scripted,local_vllm"])
    assert len(jobs) == 2 * 2700
    datas = [composer.compose(job, i)[1] for i, job in enumerate(jobs[::49])]  # an odd step: model alternates
    assert len(composer._bases) == 2  # one Hydra composition per model preset
    assert {d["model"]["name"] for d in datas} == {"scripted", "local_vllm"}


def test_interpolating_values_and_hydra_references_use_full_composition():
    composer, jobs = multirun_jobs(["agents=1,2", "results_dir=${oc.env:HOME}/x"])
    for i, job in enumerate(jobs):
        composer.compose(job, i)
    assert composer.paths == {"full": 2}


def test_a_bad_group_choice_is_reported_per_job_but_composed_once():
    from hydra.errors import MissingConfigException

    composer, jobs = multirun_jobs(["agents=1,2,3", "model=scripted"])
    jobs = [[*job[:-1], "model=no_such_preset"] for job in jobs]
    for i, job in enumerate(jobs):
        with pytest.raises(MissingConfigException):
            composer.compose(job, i)
    assert len(composer._failed) == 1


@pytest.mark.parametrize("given, want", [
    ("mode=desc", "masbench.mode=desc"),  # a family's top-level option goes to its block
    ("graph=ws,ba", "agentsnet.graph=ws,ba"),  # sweeps too
    ("masbench.mode=asc", "masbench.mode=asc"),  # already in its block
    ("model.max_connections=4", "++model.max_connections=4"),  # any model field, listed by the preset or not
    ("model.nonsense=4", "model.nonsense=4"),  # not a field: Hydra's own refusal names it
    ("agents=3", "agents=3"), ("+foo.mode=1", "+foo.mode=1"), ("mode", "mode"),
])
def test_overrides_are_rewritten_as_hydra_needs_them(given, want):
    from masgrid._private.platform.sweeps.compose import hydra_override

    assert hydra_override(given) == want


def test_a_sweep_files_top_level_key_and_the_command_lines_compose_alike():
    from masgrid._private.platform.sweeps.sweep import split_job_config

    for line in (["task=sorting", "mode=asc,desc", "agents=2"], ["task=sorting", "masbench.mode=asc,desc", "agents=2"]):
        composer, jobs = multirun_jobs(line)
        cfgs = [split_job_config(composer.compose(job, i)[1])[0] for i, job in enumerate(jobs)]
        assert [c.masbench.mode for c in cfgs] == ["asc", "desc"]
