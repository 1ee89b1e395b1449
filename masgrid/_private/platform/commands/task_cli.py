"""`masgrid instance` and `masgrid score`: a task used on its own, from the command line.

Both take input from anywhere (a shell line, a file someone edited by hand), so every
malformed input ends in one line on stderr and exit status 2, never a traceback:
`instance` validates its keys through `RunConfig` (the same checks as `masgrid run`, before
anything is generated); `score` validates the instance file as an `Instance`, bounds the
answers' nesting, and reads agent ids strictly.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from masgrid._private.envs.tasks import Instance, Score, Task, get_task
from masgrid.family import top_level_keys
from masgrid._private.platform.run.config import RunConfig, format_validation_error

#: keys `masgrid instance` takes besides the family's own options (e.g. AgentsNet's rounds)
INSTANCE_KEYS = ("agents", "k", "seed", "condition")
#: deepest nesting of an answers file: real answers are at most a list of lists of values
MAX_DEPTH = 32
#: an agent key of an answers object: "3" or "Agent-3"
AGENT_KEY = re.compile(r"(?:agent-)?(\d{1,9})", re.IGNORECASE)
#: what a task's parser or scorer may raise on an instance file it did not generate
_MISFIT = (KeyError, IndexError, TypeError, AttributeError, ZeroDivisionError)


class InputError(ValueError):
    """Malformed command-line input; the message is shown as one line."""


def one_line(exc: BaseException) -> str:
    """An error as one line: pydantic's report flattened, no control characters."""
    text = format_validation_error(exc) if isinstance(exc, ValidationError) else str(exc) or type(exc).__name__
    head, *rest = [line.strip() for line in text.splitlines() if line.strip()] or [type(exc).__name__]
    text = head + (" " if head.endswith(":") else "; ") + "; ".join(rest) if rest else head
    return " ".join(text.split())[:2000]


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (usage: {' '.join(self.format_usage().split()[1:])})", file=sys.stderr)
        raise SystemExit(2)


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """key=value words; a value is JSON where it parses as JSON (7, null, true), else text."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"expected key=value, got {item!r}")
        try:
            out[key] = json.loads(value)
        except (ValueError, RecursionError):
            out[key] = value
    return out


def instance_config(task: Task, overrides: dict[str, Any]) -> RunConfig:
    """The run configuration an instance stands for, validated as `masgrid run` validates it.

    The family's own options may be given bare (`rounds=7`, `graph=ws`) or dotted (`agentsnet.rounds=7`).
    """
    block = RunConfig.model_fields.get(task.family)
    family_keys = tuple(getattr(block.annotation, "model_fields", {})) if block is not None else ()
    mapping: dict[str, Any] = {"task": task.name, "protocol": task.protocols[0] if task.protocols else "broadcast"}
    options: dict[str, Any] = {}
    topology: dict[str, Any] = {}  # topology.kind=ring: the instance carries the neighbour lists
    unknown = []
    for key, value in overrides.items():
        bare = key.removeprefix(f"{task.family}.")
        if key in INSTANCE_KEYS or key in top_level_keys():  # `mode=...`: RunConfig puts it in its family's block
            mapping[key] = value
        elif key.startswith("topology."):
            topology[key.removeprefix("topology.")] = value
        elif bare in family_keys:
            options[bare] = value
        else:
            unknown.append(key)
    if unknown:
        takes = ", ".join(dict.fromkeys([*INSTANCE_KEYS, *family_keys, *top_level_keys(), "topology.*"]))
        raise InputError(f"unknown key(s) {', '.join(map(repr, unknown))}; {task.name} takes {takes}")
    if options:
        mapping[task.family] = options
    if topology:
        mapping["topology"] = topology
    return RunConfig.from_mapping(mapping)


def instance_command(args: list[str]) -> int:
    parser = OneLineParser(prog="masgrid instance")
    parser.add_argument("task")
    parser.add_argument("--json", action="store_true", help="JSON output (the default)")
    parser.add_argument("overrides", nargs="*", help="agents=N k=K seed=S and the family's own keys (mode=..., graph=...)")
    ns = parser.parse_args(args)
    try:
        task = get_task(ns.task)
        cfg = instance_config(task, parse_overrides(ns.overrides))
        instance = cfg.instance()
    except ValueError as exc:  # ConfigError, InputError, a generator's refusal
        print(f"masgrid instance: {one_line(exc)}", file=sys.stderr)
        return 2
    print(instance.model_dump_json(indent=2))
    return 0


def _depth(data: Any) -> int:
    """Nesting depth of a JSON value, without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return deepest


def read_json(path: Path, what: str) -> Any:
    try:
        data = json.loads(path.read_text())
    except RecursionError:
        raise InputError(f"{what} {path}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of too many digits
        raise InputError(f"{what} {path}: not valid JSON: {one_line(exc)}") from None
    if _depth(data) > MAX_DEPTH:
        raise InputError(f"{what} {path}: nested deeper than {MAX_DEPTH} levels")
    return data


def load_answers(path: Path, n_agents: int) -> list[Any]:
    """A JSON list (one entry per agent, null for none), or an object keyed by agent id
    ("3" or "Agent-3"), optionally under "answers"; anything else is refused, naming it."""
    data = read_json(path, "answers")
    if isinstance(data, dict) and "answers" in data:
        if len(data) > 1:
            raise InputError(f"answers {path}: unknown key(s) {', '.join(sorted(map(repr, set(data) - {'answers'})))}"
                             " beside 'answers'")
        data = data["answers"]
    if isinstance(data, list):
        if len(data) != n_agents:
            raise InputError(f"the instance has {n_agents} agents but {len(data)} answers were given")
        return data
    if not isinstance(data, dict):
        raise InputError("answers must be a JSON list (one entry per agent, null for none) or an object "
                         "keyed by agent id")
    answers: list[Any] = [None] * n_agents
    seen: dict[int, str] = {}
    for key, value in data.items():
        match = AGENT_KEY.fullmatch(key)
        agent = int(match.group(1)) if match else -1
        if not 0 <= agent < n_agents:
            raise InputError(f"answers: {key[:80]!r} is not an agent id (N or Agent-N with 0 <= N < {n_agents})")
        if agent in seen:
            raise InputError(f"answers: {seen[agent]!r} and {key!r} both name agent {agent}")
        seen[agent] = key
        answers[agent] = value
    return answers


def score_answers(task: Task, instance: Instance, raw: list[Any]) -> tuple[Score, dict[int, str]]:
    """(score, {agent: why its answer was refused}); a malformed answer scores as missing."""
    answers: list[Any] = []
    invalid: dict[int, str] = {}
    for i, a in enumerate(raw):
        if a is None:
            answers.append(None)
            continue
        # the same parser a run uses, and the same record of a refused answer (Task.submission)
        value, why = task.submission(instance, i, a if isinstance(a, str) else json.dumps(a))
        answers.append(value)
        if why is not None:
            invalid[i] = " ".join(why.split())[:2000]
    return task.score(instance, answers), invalid


def score_command(args: list[str]) -> int:
    parser = OneLineParser(prog="masgrid score")
    parser.add_argument("task")
    parser.add_argument("--instance", required=True, type=Path)
    parser.add_argument("--answers", required=True, type=Path)
    parser.add_argument("--json", action="store_true", help="JSON output (the default)")
    ns = parser.parse_args(args)
    try:
        task = get_task(ns.task)
        try:
            instance = Instance.model_validate(read_json(ns.instance, "instance"))
        except ValidationError as exc:
            raise InputError(f"instance {ns.instance}: not an instance: {one_line(exc)}") from None
        if instance.task != task.name:
            raise InputError(f"{ns.instance} is an instance of task {instance.task}, not {task.name}")
        if not instance.inputs or len(instance.expected) != instance.n_agents:
            raise InputError(f"instance {ns.instance}: needs one input and one expected answer per agent "
                             f"(has {len(instance.inputs)} and {len(instance.expected)})")
        raw = load_answers(ns.answers, instance.n_agents)
        try:
            score, invalid = score_answers(task, instance, raw)
        except _MISFIT as exc:  # the file was edited or comes from another version
            raise InputError(f"instance {ns.instance} does not fit task {task.name}: "
                             f"{type(exc).__name__}: {one_line(exc)}") from None
    except (OSError, ValueError) as exc:
        where = f" ({exc.filename})" if isinstance(exc, OSError) and exc.filename else ""
        text = f"{exc.strerror}{where}" if isinstance(exc, OSError) and exc.strerror else one_line(exc)
        print(f"masgrid score: {' '.join(text.split())}", file=sys.stderr)
        return 2
    print(json.dumps({**score.model_dump(mode="json"), "invalid_answers": invalid}, indent=2))
    return 0
