"""Runs in flight that follow the engine's load (platform/sweeps/admission.py), and the execution
layout chosen per schedule (execution.components=auto).

The rule is checked on readings given by hand (no Ray, no server); the reading itself against
the session's real vLLM engine; a sweep against that engine must take more than the old fixed
4 runs in flight, and one against a loopback server without /metrics must keep the fixed
limit and say so once."""

from __future__ import annotations

import logging
import threading
import urllib.request

import pandas as pd
import pytest

from masgrid._private.platform.sweeps import admission as adm
from masgrid._private.platform.sweeps.admission import AdmissionControl, Load, LoadUnreadable, VllmMetricsReader
from masgrid._private.platform.run.config import ConfigError, ExecutionSettings, RunConfig
from masgrid._private.platform.sweeps.sweep import sweep_settings
from tests.support.load_under_requests import settles_to, streams_in_flight


class Scripted(adm.LoadReader):
    def __init__(self, *loads: Load | None) -> None:
        self.loads = list(loads)

    def read(self) -> Load:
        load = self.loads.pop(0) if self.loads else Load(0, 0)
        if load is None:
            raise LoadUnreadable("scripted: no reading")
        return load


def control(mode="load", max_concurrent=None, endpoints=("e",), reader=None, **kw) -> AdmissionControl:
    settings = {name: object() for name in endpoints}
    ctl = AdmissionControl(mode, max_concurrent, settings, readers=lambda _s: reader, poll_s=3600, **kw)  # type: ignore[arg-type]
    return ctl


def fill(ctl: AdmissionControl, name: str = "e") -> int:
    """Start runs against `name` until admission refuses; returns how many started."""
    n = 0
    while ctl.may_start([name]):
        ctl.started([name])
        n += 1
    return n


def test_the_limit_grows_by_half_while_nothing_waits_up_to_the_ceiling():
    ctl = control(reader=Scripted())
    try:
        state = ctl.endpoints["e"]
        assert fill(ctl) == 4  # START_LIMIT, the old fixed default
        seen = []
        for _ in range(12):
            ctl.observe(state, Load(running=state.in_flight, waiting=0))
            fill(ctl)
            seen.append(state.limit)
        assert seen[:8] == [6, 9, 13, 19, 28, 32, 32, 32]  # written out from the rule: + max(1, limit // 2), at most 32
        assert state.in_flight == 32 and ctl.full()
    finally:
        ctl.stop()


def test_the_automatic_ceiling_counts_processes_per_cpu():
    # written out: 4 processes per CPU; actors: driver + environment + one host per 100 agents
    assert adm.processes_per_run("actors", 1, 5, 100) == 3
    assert adm.processes_per_run("actors", 1, 250, 100) == 5
    assert adm.processes_per_run("driver", 4, 8, 100) == 0.25
    assert adm.auto_ceiling(3, 2) == 4  # 8 processes on 2 cores: the old fixed default, never fewer
    assert adm.auto_ceiling(0.25, 2) == 32  # sequential runs, four to a process
    assert adm.auto_ceiling(3, 64) == 32  # a cluster: the ceiling
    assert adm.auto_ceiling(3, 12) == 16


def test_an_explicit_max_concurrent_is_the_ceiling():
    ctl = control(max_concurrent=5, reader=Scripted())
    try:
        state = ctl.endpoints["e"]
        fill(ctl)
        for _ in range(4):
            ctl.observe(state, Load(state.in_flight, 0))
            fill(ctl)
        assert (state.limit, state.in_flight) == (5, 5)
    finally:
        ctl.stop()


def test_the_limit_does_not_grow_when_it_does_not_bind_or_nothing_is_pending():
    ctl = control(reader=Scripted())
    try:
        state = ctl.endpoints["e"]
        ctl.started(["e"])  # 1 of 4
        ctl.observe(state, Load(1, 0))
        assert state.limit == 4
        fill(ctl)
        ctl.pending = lambda _name: False
        ctl.observe(state, Load(4, 0))
        assert state.limit == 4
    finally:
        ctl.stop()


def test_waiting_requests_twice_in_a_row_lower_the_limit_never_below_one():
    ctl = control(reader=Scripted())
    try:
        state = ctl.endpoints["e"]
        for _ in range(4):
            fill(ctl)
            ctl.observe(state, Load(state.in_flight, 0))
        fill(ctl)
        assert state.in_flight == 19
        ctl.observe(state, Load(128, 7))
        assert state.limit == 19  # one reading with a queue is a burst, not a trend
        ctl.observe(state, Load(128, 3))
        assert state.limit == 14  # twice in a row: 3/4 of the 19 runs in flight
        assert not ctl.may_start(["e"])
        for _ in range(19):
            ctl.ended(["e"])
        for _ in range(20):
            ctl.observe(state, Load(128, 9))
        assert state.limit == 1
        assert ctl.may_start(["e"])  # the floor: one run always may start
        ctl.started(["e"])
        assert not ctl.may_start(["e"])
    finally:
        ctl.stop()


def test_scripted_runs_and_fixed_admission_keep_the_fixed_limit():
    ctl = control(endpoints=(), reader=None)
    n = 0
    while ctl.may_start([]):
        ctl.started([])
        n += 1
    assert n == 4
    ctl.stop()
    ctl = control(mode="fixed", max_concurrent=7, reader=Scripted())
    assert not ctl.reads_load and fill(ctl) == 7
    ctl.stop()


def test_an_unreadable_load_falls_back_to_the_fixed_limit_with_one_log_line(caplog):
    ctl = control(reader=Scripted(None, Load(0, 0)))
    state = ctl.endpoints["e"]
    with caplog.at_level(logging.WARNING, logger="masgrid"):
        ctl.observe(state, ctl._read(state))
    ctl.stop()
    assert state.unreadable and state.limit == 4
    lines = [r.getMessage() for r in caplog.records if "cannot read the load" in r.getMessage()]
    assert len(lines) == 1 and "scripted: no reading" in lines[0] and "at most 4 run(s)" in lines[0]


def test_reset_per_run_holds_one_run_per_engine():
    ctl = control(reader=Scripted(), one_at_a_time=True)
    assert not ctl.reads_load and fill(ctl) == 1
    ctl.stop()


def test_vllm_metrics_text_is_summed_over_engines():
    text = ("# HELP vllm:num_requests_running x\n"
            'vllm:num_requests_running{engine="0",model_name="tiny"} 3.0\n'
            'vllm:num_requests_running{engine="1",model_name="tiny"} 2.0\n'
            'vllm:num_requests_waiting{engine="0",model_name="tiny"} 1.0\n'
            'vllm:num_requests_waiting_by_reason{engine="0",reason="capacity"} 9.0\n')
    assert adm.parse_vllm_metrics(text) == Load(5, 1)
    assert adm.parse_vllm_metrics("up 1\n") is None
    assert adm.metrics_url("http://h:8000/v1/") == "http://h:8000/metrics"


# -- sweep settings and the execution layout -------------------------------------------------

def test_sweep_settings_default_to_load_admission_and_name_bad_keys():
    settings = sweep_settings({})
    assert (settings.admission, settings.max_concurrent) == ("load", None)
    with pytest.raises(ConfigError) as err:
        sweep_settings({"admission": "greedy"})
    assert "sweep.admission" in str(err.value)


def test_components_auto_follow_the_schedule_and_explicit_values_win():
    auto = ExecutionSettings()
    assert (auto.components, auto.runs_per_driver) == ("auto", None)
    assert auto.resolved("sequential").model_dump(include={"components", "runs_per_driver"}) == \
        {"components": "driver", "runs_per_driver": 4}
    for schedule in ("lockstep", "asynchronous"):
        assert auto.resolved(schedule).model_dump(include={"components", "runs_per_driver"}) == \
            {"components": "actors", "runs_per_driver": 1}
    explicit = ExecutionSettings(components="actors")
    assert explicit.resolved("sequential").components == "actors"
    assert ExecutionSettings(components="driver").resolved("lockstep").runs_per_driver == 1
    assert ExecutionSettings(runs_per_driver=2).resolved("sequential").runs_per_driver == 2
    assert ExecutionSettings(runs_per_driver=3).resolved("lockstep").components == "driver"
    with pytest.raises(ValueError, match="runs_per_driver=2: the asynchronous schedule"):
        ExecutionSettings(runs_per_driver=2).resolved("asynchronous")


def test_status_actors_start_only_where_a_driver_runs_one_run_at_a_time():
    """A packed driver's long runs would each start a process 30 s in (the SIMAS sweep with
    defaults lost its throughput to them); explicit values still win."""
    assert ExecutionSettings().status_actor_after_s == "auto"
    assert ExecutionSettings().resolved("sequential").status_actor_after_s is None
    assert ExecutionSettings().resolved("lockstep").status_actor_after_s == 30.0
    assert ExecutionSettings(runs_per_driver=1).resolved("sequential").status_actor_after_s == 30.0
    assert ExecutionSettings(status_actor_after_s=2.0).resolved("sequential").status_actor_after_s == 2.0
    assert ExecutionSettings(status_actor_after_s=None).resolved("lockstep").status_actor_after_s is None


def test_the_layout_is_no_part_of_a_run_id():
    base = {"task": "simas/mmlu", "protocol": "groupchat", "agents": 4, "simas": {"subject": "college_physics"}}
    ids = {RunConfig.from_mapping({**base, "execution": ex}).run_id
           for ex in ({}, {"components": "actors"}, {"components": "driver", "runs_per_driver": 2},
                      {"prefix_cache": "reset_per_run"})}
    auto = RunConfig.from_mapping(base)
    assert len(ids) == 1 and (auto.execution.components, auto.execution.runs_per_driver) == ("driver", 4)
    with pytest.raises(ConfigError, match="execution.prefix_cache"):
        RunConfig.from_mapping({**base, "execution": {"prefix_cache": "flush"}})


# -- against the real engine -----------------------------------------------------------------

def test_the_load_of_the_real_engine_is_read_from_its_metrics(vllm_engine):
    """Six streamed calls of 3,000 tokens, each past its first token before the first reading.
    The tiny model writes them all within a second or two, and a saturated machine can hold
    this process back that long: a reading only counts where the engine's own token counter,
    read after it, shows more than 3,000 tokens still to write, so at least two calls
    unfinished when it was taken (running or waiting); a block that ends before any such
    reading is tried again."""
    reader = VllmMetricsReader(vllm_engine.base_url)
    assert reader.read().running == 0
    calls, tokens = 6, 3000
    checked: list[Load] = []
    for _ in range(3):
        written = vllm_engine.counters()["generation_tokens_total"]
        with streams_in_flight(vllm_engine.base_url, "tiny", calls, tokens):
            for _ in range(20):
                reading = reader.read()
                left = calls * tokens - (vllm_engine.counters()["generation_tokens_total"] - written)
                if left <= tokens:
                    break
                checked.append(reading)
        if checked:
            break
    assert checked, "the engine finished every call before any reading, three times"
    assert all(r.running + r.waiting >= 2 for r in checked), checked
    assert settles_to(reader.read, Load(0, 0)) == Load(0, 0)  # closed streams are aborted


def runs_in_flight(results) -> int:
    """Most runs executing at once, from the runs table's start and finish times."""
    runs = pd.read_parquet(results / "runs")
    points = sorted([(t, 1) for t in runs["started_at"]] + [(t, -1) for t in runs["finished_at"]],
                    key=lambda p: (p[0], p[1]))
    most = now = 0
    for _, step in points:
        now += step
        most = max(most, now)
    return most


@pytest.mark.slow
def test_a_sweep_against_the_real_engine_takes_more_runs_than_the_fixed_default(vllm_engine, tmp_path, ray_session):
    from masgrid._private.platform.sweeps.ray_runs import run_many

    model = {"name": "tiny", "base_url": vllm_engine.base_url, "max_tokens": 48, "max_retries": 0,
             "http_client": "lean"}
    # All eight runs fit one driver process (the automatic ceiling on 2 cores is then 32, not 4), so
    # a raised limit starts the fifth run at once. With four to a process it waited for a second
    # process to start, and on a loaded machine the first four runs were over by then (CI read 4).
    cfgs = [RunConfig.from_mapping({"task": "sorting", "protocol": "kv", "agents": 2, "k": 2, "max_rounds": 10,
                                    "seed": s, "backend": "openai", "model": model, "preflight": False,
                                    "results_dir": str(tmp_path / "r"),
                                    "execution": {"reuse_actors": True, "components": "driver",
                                                  "runs_per_driver": 8}})
            for s in range(8)]
    summaries = run_many(cfgs, max_concurrent=None, admission="load")
    assert [s.status for s in summaries].count("failed") == 0
    assert runs_in_flight(tmp_path / "r") > 4


@pytest.mark.slow
def test_an_endpoint_without_metrics_keeps_the_fixed_limit_and_says_so_once(tmp_path, ray_session, caplog):
    from masgrid._private.platform.sweeps.ray_runs import run_many
    from tests.support.chat_server import ChatServer, Reply

    def script(body: dict) -> Reply:
        threading.Event().wait(0.3)  # calls that take a while, so runs overlap
        return Reply(text="```\nsubmit [1, 2]\n```")

    with ChatServer(script) as server, caplog.at_level(logging.WARNING, logger="masgrid"):
        model = {"name": "test", "base_url": server.base_url, "max_tokens": 8, "max_retries": 0}
        cfgs = [RunConfig.from_mapping({"task": "sorting", "protocol": "kv", "agents": 2, "k": 2, "max_rounds": 4,
                                        "seed": s, "backend": "openai", "model": model, "preflight": False,
                                        "results_dir": str(tmp_path / "r"), "execution": {"reuse_actors": True}})
                for s in range(10)]
        run_many(cfgs, max_concurrent=None, admission="load")
        assert "/metrics" in server.gets
    lines = [r.getMessage() for r in caplog.records if "cannot read the load" in r.getMessage()]
    assert len(lines) == 1 and server.base_url.removesuffix("/v1") in lines[0]
    assert runs_in_flight(tmp_path / "r") <= 4


def test_metrics_endpoint_of_the_engine_answers_prometheus(vllm_engine):
    with urllib.request.urlopen(adm.metrics_url(vllm_engine.base_url), timeout=10) as response:
        assert "vllm:num_requests_waiting" in response.read().decode()
