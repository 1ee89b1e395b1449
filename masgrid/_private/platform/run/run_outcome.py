"""A run's status from its model-call failures: ok, degraded or invalid.

A run whose calls failed did not measure the model: an unreachable endpoint gives SR 0 at
every grid point, which a table would report as the model's score. So every failed call
is counted, and the run is labelled (docs/results.md, "Run status"):

- `ok`: every model call answered;
- `degraded`: some calls failed, at most `validity.max_model_error_rate` of them; the
  run stays in the tables, and the row says how many failed and why;
- `invalid`: more failed; tables leave it out and say how many they left out;
- `failed` (set elsewhere): the run itself did not complete; `error_class` says whose fault:
  `interrupted` (the platform: a driver, host, recorder or the sweep process died, a node
  was lost, a host hung) is re-run by a plain resume; `task_error` and `config_error` (the
  run failed on its own terms) stay failed until `sweep.retry_failed=true`.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Literal

from masgrid._private.actors.backends.errors import AGENT_LIMIT_CLASSES
from masgrid._private.platform.run.config import ValiditySettings

#: statuses whose metrics the tables use by default
USABLE = ("ok", "degraded")


def judge(model_calls: int, error_classes: Counter[str], settings: ValiditySettings) -> tuple[str, str | None]:
    """(status, error line) for a completed run. A call refused because the agent's history
    outgrew the model's context (`context_length`) is the model's limit, not a platform
    failure: the agent stopped there, the run measured the model as it is, and it counts
    towards no failure rate (its count stays in model_error_classes and context_overflows).
    So is a prompt a provider's content filter refused (`content_filter`, counted in
    content_filtered): that is the deployed model's answer (AGENT_LIMIT_CLASSES)."""
    errors = sum(n for cls, n in error_classes.items() if cls not in AGENT_LIMIT_CLASSES)
    if not errors:
        return "ok", None
    rate = errors / model_calls if model_calls else 1.0
    status = "invalid" if rate > settings.max_model_error_rate else "degraded"
    causes = ", ".join(f"{cls} x{n}" for cls, n in error_classes.most_common() if cls not in AGENT_LIMIT_CLASSES)
    limit = f"above the {settings.max_model_error_rate:g} limit" if status == "invalid" else "within the limit"
    return status, f"{status}: {errors} of {model_calls} model calls failed ({rate:.1%}, {limit}): {causes}"


def error_classes_json(error_classes: Counter[str]) -> str | None:
    return json.dumps(dict(sorted(error_classes.items()))) if error_classes else None


FailureClass = Literal["interrupted", "task_error", "config_error"]
#: failure classes a plain resume runs again: the run never got to fail on its own terms
RERUN_CLASSES = ("interrupted",)


def classify_failure(exc: BaseException) -> FailureClass:
    """Whose fault a run's failure was. Ray's system errors (an actor or worker died, a node or
    an object was lost, an actor could not start) and timeouts waiting on a host are the
    platform's; a remote call that raised is judged by the exception it raised."""
    import ray.exceptions as rex

    from masgrid._private.platform.run.config import ConfigError
    from masgrid._private.platform.cluster.engine_alive import EngineLost
    from masgrid._private.platform.run.ports import RoundTimeout

    seen = 0
    while isinstance(exc, rex.RayTaskError) and exc.cause is not None and seen < 16:
        exc, seen = exc.cause, seen + 1  # an application error inside an actor: judge its cause
    platform = (rex.RayActorError, rex.WorkerCrashedError, rex.NodeDiedError, rex.ObjectLostError,
                rex.RaySystemError, rex.LocalRayletDiedError, rex.ActorUnschedulableError,
                rex.GetTimeoutError, RoundTimeout, TimeoutError, EngineLost)
    if isinstance(exc, platform):  # asyncio.TimeoutError is TimeoutError: a host did not start or answer
        return "interrupted"
    if isinstance(exc, ConfigError) or type(exc).__name__ == "PromptMismatch":
        return "config_error"
    return "task_error"
