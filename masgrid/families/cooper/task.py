"""CooperBench tasks `cooper/<pool>/<ID>`: agents implement features of one repository state.

A task name names a task set of the dataset (`<repo>_task/task<ID>/`); which features
of its pool the run covers is `cooper.features` (a pair by default), and `cooper.setting`
says who holds them: coop and nocomm give one agent per feature, solo one agent all of them
(`agents` follows from these two: `CooperTask.resolve_agents`).

Instance layout (`masgrid instance cooper/<pool>/<ID> cooper.features=[1,3]`):
- params: pool, task_id, repo, base_commit, features, setting, the action limits, sandbox,
  resolver, policy, and the resolved paths (data_dir, repos_dir, cache_dir, work_dir);
- inputs[i]: the features agent i implements: [{id, description}];
- expected[i]: the ids of those features (there is no answer key: the merged code's tests
  decide, `score`).

Two phases, both run by the asynchronous scheduler: 1 planning (messages, then each agent
writes its plan as the summary of `finish`), 2 execution with the plan in the prompt.
An execution submission is the agent's record {patch, actions, messages, finish, ...};
`score` merges the patches and runs every feature's tests (evaluate.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

from masgrid.families.cooper import prompts
from masgrid.families.cooper.options import PATH_KEYS, RESOLVER_IDENTITY, CooperOptions
from masgrid.families.cooper.paths import resolve_paths
from masgrid.sdk.tasks import AgentView, Instance, Score, ScoringModel, Task

if TYPE_CHECKING:
    from masgrid.sdk.policies import ScriptedPolicy

PREFIX = "cooper/"
OPTION_KEYS = tuple(CooperOptions.model_fields)
#: the only protocol: tools and messages of the asynchronous scheduler (workspace.py)
PROTOCOL = "workspace"
#: where the agents are told their repository is; tool paths are relative to it
WORKSPACE_NOTE = "the repository root (every path in a tool call is relative to it)"


def parse_name(name: str) -> tuple[str, int]:
    """`cooper/<pool>/<ID>` -> (pool, id); ValueError naming the expected form."""
    parts = name.split("/")
    if len(parts) != 3 or parts[0] != "cooper" or not parts[1] or not parts[2].isdigit():
        raise ValueError(f"task {name!r}: a CooperBench task is named cooper/<pool>/<ID>, e.g. cooper/pallets_jinja_task/1621")
    return parts[1], int(parts[2])


def options_of(extra: dict[str, Any]) -> CooperOptions:
    unknown = set(extra) - set(OPTION_KEYS)
    if unknown:
        raise ValueError(f"cooper: unknown CooperBench option(s): {', '.join(sorted(unknown))}")
    return CooperOptions(**extra)


class CooperTask(Task):
    family = "cooper"
    schedule = "asynchronous"
    protocols = (PROTOCOL,)
    conditions = ("base",)
    #: a repository state and features, not a workload: `k` and `mode` are never read
    ignored_keys = ("k", "mode")
    null_ignored_columns = True  # rows show k and mode as null: they mean nothing here
    pool: ClassVar[str]
    task_id: ClassVar[int]

    def identity_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """Paths locate data on this machine; the scripted policy variant matters only to scripted agents
        (kept: a scripted run with `conflicting` is a different experiment). With the LLM resolver, its
        model's identity fields and a hash of its prompt (an edit re-runs those runs only)."""
        out = {k: (None if k in PATH_KEYS else v) for k, v in options.items()}
        model = out.get("resolver_model")
        if isinstance(model, dict):  # the model and its sampling, not how it is reached
            out["resolver_model"] = {k: model.get(k) for k in RESOLVER_IDENTITY}
        if out.get("resolver") == "llm":  # the resolver's prompt is no agent's, so the prompt hash misses it
            import hashlib

            from masgrid.families.cooper.resolver import PROMPT

            out["resolver_prompt"] = hashlib.sha256(PROMPT.encode()).hexdigest()[:16]
        return out

    def scoring_model(self, **extra: Any) -> ScoringModel | None:
        """cooper.resolver=llm: the resolver's model (cooper.resolver_model, else the run's), at temperature 0."""
        options = options_of({k: v for k, v in extra.items() if k in OPTION_KEYS})
        if options.resolver != "llm":
            return None
        return ScoringModel(actor="resolver", config_key="cooper.resolver_model", settings=options.resolver_model,
                            temperature=0.0)

    def resolve_agents(self, agents: int, **extra: Any) -> int:
        """The number of agents follows from the features and the setting."""
        return options_of({k: v for k, v in extra.items() if k in OPTION_KEYS}).n_agents()

    def validate_options(self, agents: int, k: int, seed: int, **extra: Any) -> None:
        options = options_of(extra)
        if agents != options.n_agents():
            raise ValueError(f"agents: cooper.setting={options.setting} with {len(options.features)} feature(s) "
                             f"runs {options.n_agents()} agent(s), not {agents}")
        self._data(options)  # a missing dataset, task or feature is one line now
        paths = resolve_paths(options)
        _require_base(str(paths.repos_dir), str(paths.data_dir), self.pool, self.task_id)

    def prepare_runs(self, **extra: Any) -> None:
        """Before any run of this task starts (the platform's preflight): the task's test
        environment is built, or checked if cached, so a sweep whose runs could not be scored
        stops at once with one line (TestEnvError) instead of failing every run after its agents
        worked. Once per task and paths in a process."""
        options = options_of({k: v for k, v in extra.items() if k in OPTION_KEYS})
        paths = resolve_paths(options)
        _prepare(str(paths.data_dir), str(paths.repos_dir), str(paths.cache_dir), self.pool, self.task_id)

    # -- data ------------------------------------------------------------------------------------
    def _data(self, options: CooperOptions):  # -> CooperTaskData
        paths = resolve_paths(options)
        data = _load(str(paths.data_dir), self.pool, self.task_id)
        missing = [f for f in options.features if f not in data.features]
        if missing:
            raise ValueError(f"cooper.features: task {self.pool}/{self.task_id} has features "
                             f"{sorted(data.features)}, not {missing}")
        return data

    # -- generation ------------------------------------------------------------------------------
    def generate(self, agents: int, k: int, seed: int, **extra: Any) -> Instance:
        options = options_of(extra)
        paths = resolve_paths(options)
        data = self._data(options)
        n = options.n_agents()
        owned = [list(options.features)] if options.setting == "solo" else [[f] for f in options.features]
        inputs = [[{"id": f, "description": data.features[f].description} for f in fs] for fs in owned]
        params: dict[str, Any] = {
            "pool": self.pool, "task_id": self.task_id, "repo": data.repo, "base_commit": data.base_commit,
            "features": list(options.features), "setting": options.setting, "agents": n, "seed": seed,
            "max_actions": options.max_actions, "plan_actions": options.plan_actions,
            "plan_rounds": options.plan_rounds, "sandbox": options.sandbox, "resolver": options.resolver,
            "policy": options.policy, "tool_timeout_s": options.tool_timeout_s,
            "data_dir": str(paths.data_dir), "repos_dir": str(paths.repos_dir), "cache_dir": str(paths.cache_dir),
            "work_dir": options.work_dir,
        }
        return Instance(task=self.name, params=params, inputs=inputs, expected=owned,
                        meta={"pool": self.pool, "task_id": self.task_id})

    def phases(self, condition: str) -> int:
        return 2  # planning, then execution (section 3)

    def round_limit(self, instance: Instance, max_rounds: int) -> int:
        """Actions per agent in the phase; `max_rounds` does not apply (the cap is cooper.max_actions)."""
        return int(instance.params["max_actions"])

    # -- prompts ---------------------------------------------------------------------------------
    def build_prompt(self, view: AgentView, protocol: str, condition: str) -> str:
        p = view.params
        limits = {"max_actions": int(p["max_actions"]), "plan_actions": int(p["plan_actions"]),
                  "plan_rounds": int(p["plan_rounds"])}
        return prompts.system_prompt(view.phase, str(p["setting"]), view.agent, view.n_agents, view.local_input,
                                     plan_text(view.previous), limits, WORKSPACE_NOTE)

    # -- what the asynchronous scheduler asks of its task -------------------------------------
    def open_session(self, instance: Instance):  # -> CooperSession
        """The agents' worktrees and tools for one run (made once, before planning)."""
        from masgrid.families.cooper.session import CooperSession

        return CooperSession(instance)

    def phase_tools(self, instance: Instance, phase: int) -> list[dict[str, Any]]:
        """The function-tool specs offered in a phase (section 2.1's action space)."""
        from masgrid.families.cooper.session import offered_tools, tool_specs

        return tool_specs(offered_tools(phase, str(instance.params["setting"]), instance.n_agents))

    def phase_limits(self, instance: Instance, phase: int) -> dict[str, Any]:
        """Actions per agent, and messages per agent (None: unlimited) in a phase. Section 2.1's
        budget is 100 actions an agent takes *in all*: execution gets `max_actions` less what the
        agent used in planning (`shared`); planning may use at most `plan_actions` of them."""
        p = instance.params
        if phase == prompts.PLAN_PHASE:
            return {"actions": int(p["plan_actions"]), "messages": int(p["plan_rounds"])}
        return {"actions": int(p["max_actions"]), "messages": None, "shared": True}

    @staticmethod
    def check_arguments(name: str, arguments: dict[str, Any]) -> str | None:
        """send_message and finish arguments against their specs: None, or the one-line error the agent reads."""
        from masgrid.families.cooper.tools import parse_arguments

        parsed = parse_arguments(name, arguments)
        return parsed if isinstance(parsed, str) else None

    @staticmethod
    def harness_text(key: str, **values: Any) -> str:
        return prompts.render(key, **values)

    @staticmethod
    def agent_name(agent: int) -> str:
        return prompts.agent_name(agent)

    # -- answers ---------------------------------------------------------------------------------
    def parse_answer(self, instance: Instance, agent: int, raw: str) -> Any:
        return raw  # the scheduler collects patches; nothing is parsed from text

    def score(self, instance: Instance, answers: list[Any], ask: Callable[[str], str] | None = None) -> Score:
        """Merge the agents' patches and run every feature's tests on the result (section 2.2).
        Planning submissions (plans, no patch: the driver scores every phase) are not
        evaluated: success and correctness stay null for phase 1. `ask`: the resolver's
        model (cooper.resolver=llm; the driver passes it, see `scoring_model`)."""
        from masgrid.families.cooper.scoring import score_patches

        if not any(isinstance(a, dict) and "patch" in a for a in answers):
            n = instance.n_agents
            return Score(success=None, correct=[None] * n, partial=[None] * n)

        return score_patches(instance, answers, self._data(options_of(_options_from_params(instance.params))), ask)

    def run_metrics(self, instance: Instance, score: Score, usage: dict[str, float]) -> dict[str, Any]:
        p = instance.params
        return {"cooper_pool": p["pool"], "cooper_task_id": int(p["task_id"]),
                "cooper_features": ",".join(str(f) for f in p["features"]), "cooper_setting": p["setting"],
                "cooper_sandbox": p["sandbox"]}

    def config_columns(self, **extra: Any) -> dict[str, Any]:
        """The cooper_* columns from the options alone: a failed run keeps its setting and features."""
        try:
            options = options_of({k: v for k, v in extra.items() if k in OPTION_KEYS})
        except ValueError:
            return {"cooper_pool": self.pool, "cooper_task_id": self.task_id}
        return {"cooper_pool": self.pool, "cooper_task_id": self.task_id,
                "cooper_features": ",".join(str(f) for f in options.features), "cooper_setting": options.setting,
                "cooper_sandbox": options.sandbox}

    def scripted_policy(self, view: AgentView, protocol: str, seed: int) -> ScriptedPolicy:
        from masgrid.families.cooper.policy import GoldPatchPolicy

        p = view.params
        data = self._data(options_of(_options_from_params(p)))
        own = [f["id"] for f in view.local_input]
        partners = [f for f in p["features"] if f not in own]
        return GoldPatchPolicy(view, protocol, seed, patches=[data.features[f].patch for f in own],
                               partner_patches=[data.features[f].patch for f in partners],
                               conflicting=p["policy"] == "conflicting" and view.phase == prompts.EXECUTE_PHASE,
                               features=own, read_base=lambda path: _base_text(p, data, path))


def plan_text(previous: Any) -> str | None:
    """The plan an agent wrote in the planning phase (its phase-1 submission)."""
    if isinstance(previous, dict) and isinstance(previous.get("plan"), str):
        return previous["plan"]
    return None


def _options_from_params(params: dict[str, Any]) -> dict[str, Any]:
    keys = set(OPTION_KEYS) & set(params)
    return {k: params[k] for k in keys}


@lru_cache(maxsize=32)
def _load(data_dir: str, pool: str, task_id: int):  # -> CooperTaskData
    from pathlib import Path

    from masgrid.families.cooper.layout import load_task

    return load_task(Path(data_dir), pool, task_id)


@lru_cache(maxsize=64)
def _require_base(repos_dir: str, data_dir: str, pool: str, task_id: int) -> None:
    """The source clone and its base commit exist (one line naming what to fetch); checked once per process."""
    from pathlib import Path

    from masgrid.families.cooper.repos import require_base

    require_base(Path(repos_dir), _load(data_dir, pool, task_id))


@lru_cache(maxsize=64)
def _prepare(data_dir: str, repos_dir: str, cache_dir: str, pool: str, task_id: int) -> None:
    from pathlib import Path

    from masgrid.families.cooper.evaluate import task_env

    task_env(_load(data_dir, pool, task_id), Path(repos_dir), Path(cache_dir))


def _base_text(params: dict[str, Any], data: Any, path: str) -> str:
    """A file's text at the task's base commit, from the local clone (the scripted solo
    agent combines two patches of one file on it)."""
    import subprocess
    from pathlib import Path

    from masgrid.families.cooper.repos import clone_path

    clone = clone_path(Path(params["repos_dir"]), data)
    # bytes, decoded here: text mode would turn CRLF into LF, and the edits would not match the file
    done = subprocess.run(["git", "-C", str(clone), "show", f"{params['base_commit']}:{path}"], capture_output=True)
    if done.returncode != 0:
        raise ValueError(f"scripted agent: {path} is not in {clone} at {params['base_commit']}: "
                         f"{done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode("utf-8")


@lru_cache(maxsize=256)
def task_class(name: str) -> type[CooperTask]:
    """One Task class per `cooper/<pool>/<ID>` name, made on first use (the registry's prefix hook)."""
    pool, task_id = parse_name(name)
    return type(f"Cooper_{pool}_{task_id}", (CooperTask,), {"name": name, "pool": pool, "task_id": task_id,
                                                             "__module__": __name__})


def features_json(passed: dict[int, bool]) -> str:
    return json.dumps({str(k): bool(v) for k, v in sorted(passed.items())}, sort_keys=True)
