"""The run driver: generates the instance, creates environment and agents, runs the
phases through the scheduler, scores, and records. One driver per run; as a Ray actor of
its own it is named `run:<run_id>` in namespace `masgrid`, so the dashboard lists runs by
id (on a warm driver worker, a `RunStatus` actor of that name stands in: run_status_actor.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import time
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from masgrid._private.actors import heap
from masgrid._private.actors.agent_host import AgentHost, AgentSetup, HostSpec
from masgrid._private.actors.backends import Completion
from masgrid._private.actors.backends.base import FILTERED
from masgrid._private.actors.environment import EnvironmentHost, OutcomeRecord
from masgrid._private.envs.channel import make_channel
from masgrid._private.envs.protocols.base import STACKED_VERB
from masgrid._private.envs.tasks import Instance, Task, get_task
from masgrid._private.envs.tasks.fingerprint import prompt_hash
from masgrid._private.envs.tokens import get_counter
from masgrid._private.envs.topology import run_edges, system_prompt
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.run.dashboard_metrics import RunProgress
from masgrid._private.platform.cluster.engine_alive import LOST_CLASSES, EngineLost, EngineWatch, lost
from masgrid._private.platform.run.phase_metrics import mark
from masgrid._private.platform.run.ports import AgentPoolClient, EnvironmentClient, Port
from masgrid._private.platform.run.run_metrics import PlayedRun, agent_rows, run_metrics
from masgrid._private.platform.run.run_outcome import classify_failure, error_classes_json, judge
from masgrid._private.platform.run.run_summary import RunSummary, summary_of_row
from masgrid._private.platform.run.schedulers import PhaseContext, get_scheduler, scheduler_class

#: events are sent to the recorder at least every this many rounds (and whenever the
#: pending events pass `execution.event_flush_bytes`), so a crash loses little
EVENT_FLUSH_ROUNDS = 10
#: bytes counted per event row besides its text and reply (ids, counters, timestamps)
EVENT_ROW_BYTES = 256
#: the event columns that carry model or environment text, capped at `execution.max_recorded_chars`
CAPPED_COLUMNS = ("text", "reply")


@dataclass
class AgentStats:
    rounds: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    calls_cache_reported: int = 0  # successful calls whose server reported cached tokens
    tokens_comm: int = 0
    messages_sent: int = 0
    messages_received: int = 0
    deliveries: int = 0
    files_read_others: int = 0
    model_errors: int = 0
    command_errors: int = 0
    stacked_blocks: int = 0  # blocks that held more than one command or text no command takes
    fallbacks: int = 0  # replies that failed the protocol's validator and were retried
    failed_parses: int = 0  # retries that were invalid as well
    model_calls: int = 0
    queue_s: float = 0.0  # waiting for the endpoint's shared connection limit (model.max_connections)
    calls_from_cache: int = 0  # model calls answered from the response cache (model.cache)
    tokens_in_from_cache: int = 0
    tokens_out_from_cache: int = 0
    stopped: str | None = None  # why the agent was no longer called (a final refusal)


@dataclass
class RunLog:
    """Events and per-agent counters accumulated while a run executes."""

    run_id: str
    partition: dict[str, Any]
    n_agents: int
    labels: dict[str, Any] = field(default_factory=dict)  # experiment, tags: on every row
    stats: list[AgentStats] = field(default_factory=list)
    error_classes: Counter = field(default_factory=Counter)
    usage_estimated: int = 0
    #: successful calls the provider's content filter cut short (finish_reason content_filter)
    filtered_replies: int = 0
    pending: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0
    chunk: int = 0
    #: per agent: (seq, reply) of its events since its last model call, which its next
    #: observations quote; an observation names such an event instead of repeating its text
    replies: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    next_round: int = 1
    #: a recorded text or reply longer than this is cut to it (length and sha256 of the
    #: original go to `<column>_chars` / `<column>_sha256`); None records every text whole
    max_recorded_chars: int | None = None
    #: send pending events to the recorder once they reach this many bytes (None: by rounds only)
    event_flush_bytes: int | None = None
    #: stamp every event with `t` (epoch seconds) when it has none: the timelines of a schedule
    #: that steps agents' own loops (`Scheduler.steps_agents`) need every event's time, prompts included
    timed: bool = False
    #: estimated size of `pending` (characters of text and reply + EVENT_ROW_BYTES a row)
    pending_bytes: int = 0
    #: calls recorded per scoring actor (e.g. the CooperBench resolver)
    scoring_calls: dict[str, int] = field(default_factory=dict)
    #: a team run: each agent's member, and the failed calls per member and error class
    members: tuple[str, ...] | None = None
    member_errors: dict[str, Counter] = field(default_factory=dict)
    #: the channel's outcome labels of every recorded message (docs/channel.md)
    channel_outcomes: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.stats = [AgentStats() for _ in range(self.n_agents)]

    def _event(self, **row: Any) -> int:
        row.update(run_id=self.run_id, seq=self.seq, time=datetime.now(UTC), **self.partition, **self.labels)
        if self.timed and row.get("t") is None:
            row["t"] = row["time"].timestamp()
        self.seq += 1
        self.pending_bytes += EVENT_ROW_BYTES + self._cap(row)
        self.pending.append(row)
        return row["seq"]

    def _cap(self, row: dict[str, Any]) -> int:
        """Cut an oversized text or reply in place (a 30 MB reply would otherwise be held and
        copied whole on its way to Parquet); returns the characters the row keeps."""
        kept = 0
        for column in CAPPED_COLUMNS:
            value = row.get(column)
            if not isinstance(value, str):
                continue
            if self.max_recorded_chars is not None and len(value) > self.max_recorded_chars:
                row[f"{column}_chars"] = len(value)
                row[f"{column}_sha256"] = text_sha256(value)
                value = row[column] = value[:self.max_recorded_chars]
            kept += len(value)
        return kept

    @property
    def full(self) -> bool:
        """Pending events have reached the byte budget: send them to the recorder now."""
        return self.event_flush_bytes is not None and self.pending_bytes >= self.event_flush_bytes

    # Every message that enters an agent's chat history is one event with a `role`, in
    # history order (seq), so the events alone rebuild each model call's input
    # (masgrid._private.analysis.transcript).
    def _message(self, **row: Any) -> int:
        """A prompt or observation event; counters are 0 and ok true (so pandas keeps the
        columns int and bool, as before these events existed)."""
        return self._event(**{"ok": True, "tokens_in": 0, "tokens_out": 0, "tokens_comm": 0, "messages_sent": 0, **row})

    def record_prompts(self, phase: int, prompts: dict[int, str]) -> None:
        """A phase starts each agent's history afresh with its system message."""
        self.replies, self.next_round = {}, 1
        for i in sorted(prompts):
            self._message(phase=phase, round=0, agent=i, kind="prompt", role="system", text=prompts[i])

    def record_observations(self, phase: int, observations: dict[int, list[str]], round_no: int | None = None) -> None:
        """The user messages appended before each agent's next call (exactly what its host gets)."""
        for i in sorted(observations):
            quotable = iter(self.replies.pop(i, []))
            for text in observations[i]:
                source = next((seq for seq, reply in quotable if reply == text), None)
                self._message(phase=phase, round=round_no or self.next_round, agent=i, kind="observation", role="user",
                              text=None if source is not None else text, source=source)

    def record_round(self, phase: int, round_no: int, completions: dict[int, Completion],
                     outcomes: dict[int, list[OutcomeRecord]]) -> None:
        for i in sorted(completions):
            c, st = completions[i], self.stats[i]
            if c.retry_of is not None:  # the invalid first reply of a validated round
                first = c.retry_of
                st.fallbacks += 1
                st.failed_parses += c.validation == "failed"
                self._count_call(st, first, i)
                invalid = self._event(
                    phase=phase, round=round_no, agent=i, kind="model_call", verb="invalid_reply", role="assistant",
                    text=first.text, reply=first.invalid_reason, ok=False, error=first.error,
                    error_class=first.error_class, http_status=first.http_status,
                    tokens_in=first.tokens_in, tokens_out=first.tokens_out, tokens_comm=0,
                    usage_source=first.usage_source, latency_s=first.latency_s, attempts=first.attempts,
                    queue_s=first.queue_s, call_started=_when(first.started_at), messages_sent=0,
                    from_cache=first.from_cache)
                # the host's retry turn: the format check's message, as a user message
                self._message(phase=phase, round=round_no, agent=i, kind="observation", verb="retry", role="user",
                              source=invalid)
            self._record_call(phase, round_no, i, c, f"round {round_no}")
            quotable = self.replies[i] = []
            for o in outcomes.get(i, []):
                quotable.append((self.seq, o.reply))
                st.tokens_comm += o.tokens_comm
                st.messages_sent += o.messages_sent
                st.messages_received += o.received
                st.deliveries += o.deliveries
                st.files_read_others += o.read_other
                st.command_errors += (o.kind == "command" and not o.ok)
                st.stacked_blocks += (o.kind == "harness" and o.verb == STACKED_VERB)
                self._event(phase=phase, round=round_no, agent=i, kind=o.kind, verb=o.verb, text=o.block,
                            reply=o.reply, ok=o.ok, error=None, tokens_in=0, tokens_out=0,
                            tokens_comm=o.tokens_comm, usage_source=None, latency_s=None, attempts=None,
                            messages_sent=o.messages_sent, peers=o.peers, **self._channel(o.channel))
        self.next_round = round_no + 1

    def _channel(self, columns: dict[str, Any] | None) -> dict[str, Any]:
        """An event's channel columns, counted for the run's channel metrics."""
        if not columns:
            return {}
        self.channel_outcomes.update(columns["channel_outcome"])
        return columns

    def _record_call(self, phase: int, round_no: int, agent: int, c: Completion, where: str, **extra: Any) -> None:
        """A model call that went into the history: its counters, a final refusal (`where`
        says when), and its `model_call` event."""
        st = self.stats[agent]
        st.rounds += 1
        self._count_call(st, c, agent)
        if c.final and st.stopped is None:
            st.stopped = f"phase {phase} {where}: {c.error}"
        self._event(phase=phase, round=round_no, agent=agent, kind="model_call", verb=None, role="assistant",
                    text=c.recorded_text, reply=None, ok=c.error is None, error=c.error, error_class=c.error_class,
                    http_status=c.http_status, tokens_in=c.tokens_in, tokens_out=c.tokens_out, tokens_comm=0,
                    tokens_cached=c.tokens_cached, usage_source=c.usage_source, latency_s=c.latency_s,
                    attempts=c.attempts, queue_s=c.queue_s, call_started=_when(c.started_at), messages_sent=0,
                    finish_reason=c.finish_reason, tool_calls=_history_calls(c, self.max_recorded_chars),
                    from_cache=c.from_cache, **extra)

    def _count_call(self, st: AgentStats, c: Completion, agent: int) -> None:
        st.model_calls += 1
        st.queue_s += c.queue_s
        st.tokens_in += c.tokens_in
        st.tokens_out += c.tokens_out
        if c.from_cache:
            st.calls_from_cache += 1
            st.tokens_in_from_cache += c.tokens_in
            st.tokens_out_from_cache += c.tokens_out
        if c.tokens_cached is not None:
            st.tokens_cached += c.tokens_cached
            st.calls_cache_reported += 1
        if c.error is not None:
            st.model_errors += 1
            self.error_classes[c.error_class or "backend_error"] += 1
            if self.members is not None:
                self.member_errors.setdefault(self.members[agent], Counter())[c.error_class or "backend_error"] += 1
        elif c.usage_source in ("estimate", "invalid"):
            self.usage_estimated += 1
        if c.error is None and c.finish_reason == FILTERED:
            self.filtered_replies += 1

    def record_step(self, phase: int, step: int, agent: int, started: float | None, c: Completion | None,
                    before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
        """One step of an agent's own loop (asynchronous schedule): what its call appended,
        the call, then its actions, tool results and messages; every row keeps its time `t`."""
        st = self.stats[agent]
        for row in before:
            st.messages_received += row["kind"] == "delivery"
            st.tokens_comm += int(row.get("tokens_comm", 0))
            self._message(phase=phase, round=step, agent=agent, **_quoting(row, self.seq))
        if c is not None:
            self._record_call(phase, step, agent, c, f"step {step}", t=started)
        for row in after:
            st.messages_sent += int(row.get("messages_sent", 0))
            if row["kind"] == "message" and row.get("channel_outcome"):  # the send, not its deliveries
                self._channel({"channel_outcome": row["channel_outcome"]})
            st.tokens_comm += int(row.get("tokens_comm", 0))
            st.command_errors += row["kind"] == "tool_result" and not row.get("ok", True)
            self._event(**{"ok": True, "tokens_in": 0, "tokens_out": 0, "tokens_comm": 0, "messages_sent": 0,
                           "phase": phase, "round": step, "agent": agent, **_quoting(row, self.seq)})

    def record_scoring_call(self, phase: int, actor: str, prompt: str, c: Completion) -> None:
        """A call the scorer made to its own model (platform/run/scoring_model.py): an event of
        `actor`, no agent's; `round` numbers the actor's calls from 1. Its tokens stay out
        of every agent's counters."""
        self.scoring_calls[actor] = number = self.scoring_calls.get(actor, 0) + 1
        self._event(phase=phase, round=number, agent=None, actor=actor, kind="scoring_call", verb=None, role=None,
                    text=prompt, reply=c.text, ok=c.error is None, error=c.error, error_class=c.error_class,
                    http_status=c.http_status, tokens_in=c.tokens_in, tokens_out=c.tokens_out, tokens_comm=0,
                    usage_source=c.usage_source, latency_s=c.latency_s, attempts=c.attempts, queue_s=c.queue_s,
                    call_started=_when(c.started_at), messages_sent=0, t=c.started_at, from_cache=c.from_cache)

    def take_chunk(self) -> tuple[int, list[dict[str, Any]]]:
        rows, self.pending, self.pending_bytes = self.pending, [], 0
        self.chunk += 1
        return self.chunk, rows


class LoggedAgents:
    """The agents as a scheduler steps them: each step's observations are logged first."""

    def __init__(self, pool: AgentPoolClient, log: RunLog, phase: int,
                 flush: Callable[[], Awaitable[None]] | None = None, watch: EngineWatch | None = None) -> None:
        self.pool, self.log, self.phase, self.flush, self.watch = pool, log, phase, flush, watch
        self.n_agents = pool.n_agents

    async def step(self, observations: dict[int, list[str]], expect: str | None = None,
                   round_no: int | None = None) -> dict[int, Completion]:
        """`round_no`: the round these observations belong to, for a scheduler whose rounds
        hold several steps (sequential); by default the round after the last recorded one."""
        self.log.record_observations(self.phase, observations, round_no)
        if self.flush is not None and self.log.full:  # large observations: out before the next replies come in
            await self.flush()
        completions = await self.pool.step(observations, expect)
        if self.watch is not None:  # a lost endpoint ends the run here, not after every later call failed
            await self.watch.check(c.error_class for c in completions.values() if c.error is not None)
        return completions

    async def act(self, agent: int, new_messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Completion:
        """A tool-aware step (asynchronous schedule); its scheduler records the step's events itself."""
        completion = await self.pool.act(agent, new_messages, tools)
        if self.watch is not None and completion.error is not None:
            await self.watch.check([completion.error_class])
        return completion


def _config_columns(task: Task, cfg: RunConfig) -> dict[str, Any]:
    try:
        return task.config_columns(**cfg.generation_kwargs())
    except Exception:  # noqa: BLE001 - a failed run is recorded whatever its task says
        return {}


class RunDriver:
    """Executes one run. Wrapped as a Ray actor by the launcher, or used in-process."""

    def __init__(self, cfg: RunConfig, recorder: Any, recorder_remote: bool, pool: Any = None,
                 status: Any = None) -> None:
        self.cfg = cfg
        self.recorder = Port(recorder, recorder_remote)
        self.remote = cfg.execution.executor == "ray"
        #: environment and agent hosts as actors of their own (else objects in this process)
        self.component_actors = self.remote and cfg.execution.components == "actors"
        self.pool = pool if self.component_actors else None  # DriverHosts: borrow warm hosts
        self._actors: list[tuple[str, Any]] = []
        self._local: list[Any] = []  # components living in this driver (execution.components=driver)
        self.progress: dict[str, Any] = {"phase": 0, "round": 0}
        # `status`: on a warm worker, the RunName that names this run in the dashboard
        self.metrics = RunProgress(cfg.run_id, cfg.task, cfg.protocol, enabled=self.remote,
                                   experiment=cfg.experiment or "", status=status)

    def status(self) -> dict[str, Any]:
        return dict(self.progress)

    async def run(self) -> RunSummary:
        cfg = self.cfg
        run_id = cfg.run_id
        partition = cfg.partition
        started = datetime.now(UTC)
        t0 = time.perf_counter()
        heap.settle()  # in a driver actor: the previous run's objects are gone, freeze the rest
        task = get_task(cfg.task)
        team = cfg.team_resolved
        log = RunLog(run_id, partition, cfg.agents, labels=cfg.labels(), members=team.agents if team else None,
                     max_recorded_chars=cfg.execution.max_recorded_chars,
                     event_flush_bytes=cfg.execution.event_flush_bytes,
                     timed=scheduler_class(task.schedule).steps_agents)
        run_row: dict[str, Any] = {}
        agent_rows: list[dict[str, Any]] = []
        status, error, error_class = "ok", None, None
        engine_lost: str | None = None
        engine_lost_endpoint: str | None = None
        # Clearing a previous attempt's files overlaps with starting the components; the
        # recorder runs this caller's calls in order, so it precedes every write of this run.
        begun = asyncio.ensure_future(self.recorder.call("begin_run", run_id, partition))
        try:
            instance = cfg.instance()
            _check_prompts(cfg, task, instance)
            run_row, agent_rows = await self._play(task, instance, log, begun)
            await asyncio.to_thread(check_engine_kept, cfg, log.error_classes)
            if cfg.team_resolved is not None:  # each member judged on its own calls (docs/team.md)
                from masgrid._private.platform.run.team import judge_members

                status, error = judge_members(json.loads(run_row["team_by_model"]), log.member_errors, cfg.validity)
            else:
                status, error = judge(run_row["model_calls"], log.error_classes, cfg.validity)
        except asyncio.CancelledError:  # its command died (ray_runs.DriverWorker): hosts killed, nothing recorded
            status = "cancelled"
            begun.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - a failed run is recorded, never lost
            status, error, error_class = "failed", f"{type(exc).__name__}: {exc}", classify_failure(exc)
            if isinstance(exc, EngineLost):
                engine_lost, engine_lost_endpoint = exc.problem or str(exc), exc.endpoint
            tb = traceback.format_exc(limit=8)
            error = error if len(tb) > 4000 else f"{error}\n{tb}"
        finally:
            await self._shutdown(clean=status == "ok")
        await begun  # a recorder that cannot even begin a run fails the run loudly here
        self.metrics.finished(status)
        chunk, rows = log.take_chunk()
        if rows:  # a run that ended cleanly sent its events already (an empty chunk writes no file)
            await self.recorder.call("write_events", run_id, partition, chunk, rows)
        wall = time.perf_counter() - t0
        if status != "ok":  # what the configuration says, for a run that never reached its scorer
            run_row.update({k: v for k, v in _config_columns(task, cfg).items() if run_row.get(k) is None})
        run_row.update(cfg.columns(), status=status, error=error, error_class=error_class, wall_s=wall, started_at=started,
                       finished_at=datetime.now(UTC),
                       model_error_classes=error_classes_json(log.error_classes))
        await self.recorder.call("finish_run", run_row, agent_rows, partition)
        return summary_of_row(cfg.task, run_row, cfg.results_dir, engine_lost=engine_lost,
                              engine_lost_endpoint=engine_lost_endpoint)

    # -- components ------------------------------------------------------------------------
    async def _spawn(self, cls: type, name: str, *args: Any, concurrency: int = 1) -> Port:
        """A component as a Ray actor (or a local object): named `name` for this run, or
        borrowed from the host pool and configured for this run. Concurrency 1 keeps the
        environment strictly sequential; async agent hosts interleave their model calls."""
        if not self.component_actors:
            # counted as a run of its own, so its constructor's heap.settle freezes nothing: in a
            # driver process the live objects are this run's, whose cycles would then never be freed
            with heap.run_in_process():
                component = cls(*args)
            if self.remote:  # execution.components=driver: a long-lived process, so a failed run's clients are closed
                self._local.append(component)
            return Port(component, remote=False)
        import ray

        if self.pool is not None:
            (actor,) = await self.pool.acquire(cls.__name__, 1)
            self._actors.append((cls.__name__, actor))
            # A host the pool just created may still be starting: same limit as a fresh one.
            await asyncio.wait_for(actor.configure.remote(*args), timeout=self.cfg.execution.actor_start_timeout_s)
        else:
            actor = ray.remote(num_cpus=0)(cls).options(name=name, namespace="masgrid",
                                                         max_concurrency=concurrency).remote(*args)
            self._actors.append((cls.__name__, actor))
        return Port(actor, remote=True)

    async def _start_components(self, instance: Instance) -> tuple[Port, AgentPoolClient]:
        cfg = self.cfg
        n_hosts = math.ceil(cfg.agents / cfg.execution.agents_per_actor)
        counter = cfg.token_counting().spec  # auto resolved: the model's tokenizer, else approx (recorded)
        team = cfg.team_resolved
        spec = HostSpec(backend=cfg.backend, settings=cfg.model, protocol=cfg.protocol, seed=cfg.seed,
                        token_counter=counter, pooled=self.pool is not None,
                        members={n: (m.backend, m.settings) for n, m in team.members.items()} if team else None,
                        member_of=list(team.agents) if team else None)
        env, *hosts = await asyncio.gather(
            self._spawn(EnvironmentHost, f"env:{cfg.run_id}", cfg.protocol, instance, counter,
                        cfg.condition, cfg.channel if cfg.channel.active else None, cfg.seed),
            *(self._spawn(AgentHost, f"agents:{cfg.run_id}:{h}", spec, concurrency=64) for h in range(n_hosts)))
        # Contiguous blocks of ids per host: host h serves agents h*size .. (h+1)*size-1.
        size = math.ceil(cfg.agents / n_hosts)
        assignment = [i // size for i in range(cfg.agents)]
        if self.component_actors and self.pool is None:  # pooled hosts answered `configure` already
            await asyncio.wait_for(asyncio.gather(env.call("ready"), *(h.call("ready") for h in hosts)),
                                   timeout=cfg.execution.actor_start_timeout_s)
        round_timeout = cfg.execution.round_timeout_s
        endpoints = cfg.agent_endpoints()
        if round_timeout is None and endpoints:
            # every attempt may time out, plus the client's backoff between attempts (the slowest member's)
            round_timeout = max((m.timeout_s + 10.0) * (m.max_retries + 1) + 30.0 for m in endpoints)
        return env, AgentPoolClient(hosts, assignment, round_timeout)

    async def _shutdown(self, clean: bool) -> None:
        """Kill this run's actors, or hand pooled ones back after a clean run."""
        local, self._local = self._local, []
        if not clean:  # a clean run closed its hosts already (pool.close)
            for component in local:
                if isinstance(component, AgentHost):
                    with contextlib.suppress(Exception):
                        await component.close()
        if not (self.component_actors and self._actors):
            return
        import ray

        if self.pool is not None and clean:
            for kind in {k for k, _ in self._actors}:
                await self.pool.release(kind, [a for k, a in self._actors if k == kind])
        else:
            for _, actor in self._actors:
                ray.kill(actor, no_restart=True)
        self._actors = []

    # -- the run ------------------------------------------------------------------------------
    async def _play(self, task: Task, instance: Instance, log: RunLog,
                  begun: asyncio.Future) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        cfg = self.cfg
        t_start = time.perf_counter()
        (env_port, pool), _ = await asyncio.gather(self._start_components(instance), begun)
        env = EnvironmentClient(env_port)
        startup_s = time.perf_counter() - t_start
        scheduler = get_scheduler(task.schedule)
        n_phases = task.phase_count(instance, cfg.condition)
        previous: list[Any] = [None] * cfg.agents
        first_prompts: list[str] = []
        phase_subs: list[list[Any]] = []  # the submissions each phase ended with
        marks = [mark(log.stats)]  # every agent's counters at each phase boundary

        writing: list[asyncio.Future] = []  # at most one event chunk on its way to the recorder
        flushing = asyncio.Lock()  # a schedule's agent loops (steps_agents) flush concurrently

        async def flush() -> None:
            """Send the pending events; the round goes on while the recorder writes them. The
            previous chunk is awaited first, so one chunk at most is in flight (memory stays
            bounded and a failed write fails the run at the next flush, or at the run's end)."""
            async with flushing:
                if writing:
                    await writing.pop()
                chunk, rows = log.take_chunk()
                writing.append(asyncio.ensure_future(
                    self.recorder.call("write_events", log.run_id, log.partition, chunk, rows)))

        async def on_round(phase: int, round_no: int, completions: dict[int, Completion],
                           outcomes: dict[int, list[OutcomeRecord]]) -> None:
            self.progress = {"phase": phase, "round": round_no}
            self.metrics.round(phase, round_no)
            log.record_round(phase, round_no, completions, outcomes)
            if round_no % EVENT_FLUSH_ROUNDS == 0 or log.full:
                await flush()

        async def record_step(phase: int, step: int, agent: int, *rest: Any) -> None:
            self.progress = {"phase": phase, "round": step}
            self.metrics.round(phase, step)
            log.record_step(phase, step, agent, *rest)
            if step % EVENT_FLUSH_ROUNDS == 0 or log.full:
                await flush()

        # a schedule that counts its messages' tokens itself (else the environment does) gets the run's counter
        comm_counter = get_counter(cfg.token_counting().spec) if scheduler.counts_message_tokens else None
        # one that routes its messages itself gets the run's channel, one for all phases (docs/channel.md)
        channel = make_channel(cfg.channel, cfg.seed) if scheduler.routes_messages else None
        submissions: list[Any] = [None] * cfg.agents
        watch = EngineWatch(watched_endpoints(cfg), cfg.preflight)
        for phase in range(1, n_phases + 1):
            prompts = await self._start_phase(task, instance, phase, previous, log, env_port, pool)
            first_prompts = prompts if phase == 1 else first_prompts
            ctx = PhaseContext(phase=phase, n_agents=cfg.agents, max_rounds=task.round_limit(instance, cfg.max_rounds),
                               agents=LoggedAgents(pool, log, phase, flush, watch), env=env,
                               on_round=on_round, task=task, instance=instance, record_step=record_step,
                               count_tokens=comm_counter, channel=channel)
            result = await scheduler.run_phase(ctx)
            submissions = result.submissions
            phase_subs.append(list(submissions))
            marks.append(mark(log.stats))
            previous = list(submissions)
            await flush()  # the phase's last events: written while the next phase starts or the hosts close

        async def drain() -> None:
            """The last chunk in flight: written, or its failure fails the run."""
            async with flushing:
                if writing:
                    await writing.pop()

        await asyncio.gather(pool.close(), drain())

        score, scoring = await self._final_score(task, instance, submissions, log, n_phases)
        played = PlayedRun(n_phases=n_phases, phase_submissions=phase_subs, marks=marks, first_prompts=first_prompts,
                           startup_s=startup_s, edges=run_edges(cfg.topology, cfg.seed, task, instance))
        scores = played.phase_scores(task, instance, score)
        return (run_metrics(cfg, task, instance, log, scores, scoring, played),
                agent_rows(cfg, instance, log, scores, played))

    async def _start_phase(self, task: Task, instance: Instance, phase: int, previous: list[Any], log: RunLog,
                           env_port: Port, pool: AgentPoolClient) -> list[str]:
        """Each agent's view and system prompt for `phase` (recorded), the environment reset and
        the hosts' histories fresh; the prompts, agent by agent."""
        cfg = self.cfg
        setups = {}
        for i in range(cfg.agents):
            view = task.view(instance, i, phase=phase, previous=previous[i])
            setups[i] = AgentSetup(view=view, system_prompt=system_prompt(task, view, cfg.protocol, cfg.condition))
        log.record_prompts(phase, {i: s.system_prompt for i, s in setups.items()})
        # The environment's reset and the hosts' fresh histories are independent: one round trip.
        await asyncio.gather(env_port.call("reset"), pool.broadcast(
            "start_phase", {h: {i: setups[i] for i in ids} for h, ids in pool.groups(list(range(cfg.agents))).items()}))
        return [setups[i].system_prompt for i in range(cfg.agents)]

    async def _final_score(self, task: Task, instance: Instance, submissions: list[Any], log: RunLog,
                           phase: int) -> tuple[Any, dict[str, Any]]:
        """The final phase's score; with a scoring model (CooperBench's resolver) the scorer
        runs in a thread and its model calls are recorded (platform/run/scoring_model.py)."""
        cfg = self.cfg
        request = task.scoring_model(**cfg.generation_kwargs())
        if request is None:
            return task.score(instance, submissions), {}
        from masgrid._private.actors.backends import host_clients, make_backend
        from masgrid._private.platform.run.scoring_model import run_with_ask, scoring_settings

        kind, settings = scoring_settings(request, cfg.backend, cfg.model)
        spec = cfg.token_counting().spec
        view = task.view(instance, 0, phase=phase)  # only a Serve stand-in reads it (its agent tag)
        shared: dict[str, Any] = {"token_counter": spec}
        backend = make_backend(kind, settings, get_counter(spec), view, cfg.protocol, cfg.seed, shared)
        try:
            return await run_with_ask(lambda ask: task.score(instance, submissions, ask=ask),  # type: ignore[call-arg]
                                      request.actor, settings, backend,
                                      lambda prompt, c: log.record_scoring_call(phase, request.actor, prompt, c))
        finally:
            await host_clients(shared).aclose()


def _check_prompts(cfg: RunConfig, task: Task, instance: Instance) -> None:
    """Refuse to run prompts other than those the run id was computed from (a driver on a
    node whose conf/ differs from the planner's, or a prompt file edited mid-sweep): its
    rows would otherwise be filed under the wrong identity. The prompts are rendered from
    the run's own instance, the one `cfg.render_prompt_hash` would generate again from the
    same arguments (generating it twice cost a 100-agent AgentsNet run 0.1 s)."""
    here = prompt_hash(task, instance, cfg.protocol, cfg.condition)
    if here != cfg.prompt_hash:
        raise PromptMismatch(f"the prompts this driver renders (hash {here}) differ from those the run was planned "
                             f"with (hash {cfg.prompt_hash}); was conf/ edited during the sweep, or does this node "
                             f"read another conf/ (MASGRID_CONF)? Re-run the sweep to plan it again.")


class PromptMismatch(RuntimeError):
    """The run's prompts changed between planning and execution."""


def _quoting(row: dict[str, Any], seq: int) -> dict[str, Any]:
    """A history message recorded in `reply` (a tool result, a delivered message) names its
    own event as `source`, so the events alone rebuild the history (analysis/transcript.py)."""
    if row.get("role") and row.get("text") is None and row.get("reply") is not None:
        return {**row, "source": seq}
    return row


def _history_calls(c: Completion, cap: int | None) -> str | None:
    """The tool calls of a reply as its history message holds them, for the exact rebuild of
    later prompts (analysis/transcript.py): `text` records them only as ```tool blocks. Past
    `cap` characters (execution.max_recorded_chars) only the marker `capped` is kept, and the
    rebuilt turn says it is not exact."""
    if not c.tool_calls:
        return None
    from masgrid._private.actors.backends.chat_tools import assistant_turn

    recorded = json.dumps({"content_chars": len(c.text or ""), "calls": assistant_turn(c)["tool_calls"]})
    if cap is not None and len(recorded) > cap:
        return json.dumps({"content_chars": len(c.text or ""), "capped": True})
    return recorded


def _when(epoch_s: float | None) -> datetime | None:
    return None if epoch_s is None else datetime.fromtimestamp(epoch_s, UTC)


def text_sha256(text: str) -> str:
    """Hex sha256 of a text's UTF-8 bytes (lone surrogates, which model output may carry, as
    surrogatepass encodes them), so a capped text can be checked against its original."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def check_engine_kept(cfg: RunConfig, error_classes: Counter) -> None:
    """A run whose calls failed as if the endpoint went away, while preflight had found it
    answering, is re-checked at its end (EngineWatch checks between rounds, at most every few
    seconds): an endpoint that no longer answers was lost mid-run (an engine killed, a Serve
    app gone), and the run is interrupted - re-run on resume - never the agents' model
    failures. Without preflight nothing says it ever answered: the calls stay the model's
    failures (status degraded or invalid). A team's run checks each of its endpoints."""
    watched = watched_endpoints(cfg)
    if not cfg.preflight or not watched or not LOST_CLASSES & set(error_classes):
        return
    from masgrid._private.platform.cluster.engine_alive import SERVER_FAILED, probe

    for settings in watched:
        problem = probe(settings, SERVER_FAILED in error_classes)
        if problem is not None:
            raise lost(settings, problem, sum(error_classes.values()))


def watched_endpoints(cfg: RunConfig) -> list[Any]:
    """The endpoints whose loss ends the run (EngineWatch, check_engine_kept): every distinct
    endpoint its model agents call (a team may have several); none for scripted agents."""
    return list(cfg.agent_endpoints())
