"""Checks before a run or sweep starts anything: results_dir is writable, the model answers.

Without them a wrong port, an unlisted model name or a read-only results_dir shows up
minutes later as thousands of failed model calls or a traceback from the recorder actor.
Each distinct (base_url, served model) of a grid is checked once, over HTTP (aiohttp) with
a short timeout: the models list must name the served model, and one 1-token chat completion
(the run's own request body, sampling and extra_body included) must come back well formed.
A 401 or 403 names the variable the key is read from (never the key).
`preflight=false` skips the endpoint checks. A scorer's own model (CooperBench's
`cooper.resolver_model`) is checked the same way, whatever the agents' backend. Last, a task's
own prerequisites on this machine (`prepare_runs`, e.g. CooperBench builds or checks its test
environment), so a sweep whose runs could not be scored stops before any agent starts.

Context: a vLLM server lists each model's context (`max_model_len`; Ray Serve LLM:
`metadata.max_request_context_length`). The 1-token probe sends the run's own longest first
prompt (system message and opening), so the server itself counts it in its own tokens; a
run whose first prompt plus `model.max_tokens` cannot fit is refused here, naming the
numbers, instead of failing every call later. Unset `max_tokens` lets a reply fill the rest
of the context (a model that never stops then leaves no room for the next prompt): logged.
What each probe found is appended to `<results_dir>/preflight.jsonl` (its tokens are the
engine's too: a run's token counts plus these equal the engine's counters).

backend=serve without a base_url: masgrid deploys the app first (`ensure_served`), then
checks it the way agents reach it: a vLLM app gets one 1-token call through the
DeploymentHandle (route=handle) or the HTTP checks on Serve's route (route=http). The CPU
stand-in only answers requests that carry an agent tag (it replays a scripted policy), so
for it the models list (route=http) or the app being RUNNING (route=handle) is the check.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any
from collections.abc import Sequence

from masgrid._private.platform.cluster.engine_alive import PING
from masgrid._private.actors.backends.base import BackendSettings
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.run.scoring_model import scoring_endpoint

#: seconds one preflight request may take (bounded by model.timeout_s)
PREFLIGHT_TIMEOUT_S = 15.0
log = logging.getLogger(__name__)


class PreflightError(ValueError):
    """A check failed; the message is one line naming what and where. `status`: the HTTP
    status the endpoint refused with, when it did."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def check_results_dir(results_dir: str) -> None:
    """results_dir must accept a file; it is created if missing, but not its parent: a
    mistyped path would otherwise start a fresh sweep beside the one meant to resume."""
    path = Path(results_dir).expanduser()
    if path.exists() and not path.is_dir():
        raise PreflightError(f"results_dir {results_dir}: not a directory")
    if not path.exists() and not path.parent.is_dir():
        raise PreflightError(f"results_dir {results_dir}: its parent directory {path.parent} does not exist "
                             "(create it first)")
    _check_writable(path, f"results_dir {results_dir}")


def _check_writable(path: Path, what: str, parents: bool = False) -> None:
    """`path` is made if missing (with its parents when asked) and must accept a file."""
    try:
        path.mkdir(parents=parents, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".masgrid-write-check-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
        raise PreflightError(f"{what}: not writable: {reason}{where}") from None


def check_cache_dirs(cfgs: Sequence[RunConfig]) -> None:
    """With model.cache on, its directory must be writable here: otherwise every answer would
    go unstored and a resume would pay for all of them again, with only a log line to say so."""
    from masgrid._private.actors.backends.response_store import cache_root

    for cache_dir in sorted({str(cache_root(c.model.cache_dir)) for c in cfgs if c.model.cache and c.agent_endpoints()}):
        _check_writable(Path(cache_dir), f"model.cache_dir {cache_dir}", parents=True)


def preflight(cfgs: Sequence[RunConfig], served: bool = True) -> None:
    """Every check for these runs; raises PreflightError on the first failure. `served=False`:
    leave out the Serve apps masgrid deploys (a sweep in model phases checks each as it loads)."""
    for results_dir in sorted({c.results_dir for c in cfgs}):
        check_results_dir(results_dir)
    check_cache_dirs(cfgs)
    http: dict[tuple[str, str], tuple[BackendSettings, RunConfig | None]] = {}
    to_serve: dict[str, tuple[BackendSettings, RunConfig]] = {}
    for cfg in cfgs:
        own = scoring_endpoint(cfg) if cfg.preflight else None  # e.g. cooper.resolver_model, even for scripted agents
        if own is not None:
            http.setdefault((own.base_url or "", own.request_model), (own, None))
        if not cfg.preflight:
            continue
        for settings in cfg.agent_endpoints():  # the run's model, or every distinct model member of its team
            if settings.base_url:  # backend=openai, or a Serve app someone else runs
                key = (settings.base_url, settings.request_model)
                if key not in http or _longer(cfg, http[key][1]):
                    http[key] = (settings, cfg)
            elif served:
                to_serve.setdefault(settings.name, (settings, cfg))
    probes: list[dict[str, Any] | None] = []
    for settings, first in http.values():  # before Ray starts: fails in seconds
        probes.append(check_endpoint(settings, messages=_first_messages(first)))
    if to_serve:  # the apps these runs need, deployed together (one line if they cannot be)
        from masgrid._private.platform.cluster.ray_session import ensure_ray
        from masgrid._private.platform.sweeps.model_phases.cluster_state import PhasesBusy
        from masgrid._private.platform.sweeps.model_phases.plan import PhasePlanError
        from masgrid._private.platform.sweeps.model_phases.runner import ensure_models

        ensure_ray(cfgs[0].execution.ray_address)
        try:
            ensure_models([c for c in cfgs if c.preflight])
        except (PhasePlanError, PhasesBusy) as exc:
            raise PreflightError(str(exc)) from None
    for settings, served_cfg in to_serve.values():
        probes.append(check_served(served_cfg, settings))
    note_probes(cfgs, [p for p in probes if p])
    check_prefix_cache_reset(cfgs)
    check_task_prerequisites(cfgs)  # last: it may build (e.g. pip-install a test environment) for minutes


def check_prefix_cache_reset(cfgs: Sequence[RunConfig]) -> None:
    """execution.prefix_cache=reset_per_run: each engine the runs call must take a reset now
    (one, harmless: nothing of the sweep runs yet), so a server that offers none (vLLM without
    VLLM_SERVER_DEV_MODE=1: HTTP 404) is one line before anything starts."""
    from masgrid._private.platform.cluster.engine_alive import endpoint_name
    from masgrid._private.platform.cluster.prefix_cache import PrefixCacheResetError, reset_prefix_cache

    seen: set[str] = set()
    for cfg in cfgs:
        if cfg.execution.prefix_cache != "reset_per_run":
            continue
        for settings in cfg.agent_endpoints():
            name = endpoint_name(settings)
            if name in seen:
                continue
            seen.add(name)
            if not settings.base_url:  # a Serve app: deployed by check_served above, or by the sweep
                from masgrid._private.platform.cluster.ray_session import ensure_ray
                from masgrid._private.platform.cluster.serve_apps import ensure_served

                ensure_ray(cfg.execution.ray_address)
                ensure_served(settings)
            try:
                reset_prefix_cache(settings)
            except PrefixCacheResetError as exc:
                raise PreflightError(f"preflight {name}: {exc}") from None


def check_task_prerequisites(cfgs: Sequence[RunConfig]) -> None:
    """What a task's runs need on this machine before any agent starts (a task's optional
    `prepare_runs`, e.g. CooperBench's test environment): a failure is one line, nothing started."""
    from masgrid._private.envs.tasks import get_task

    for cfg in cfgs:
        prepare = getattr(get_task(cfg.task), "prepare_runs", None)
        if prepare is None:
            continue
        try:
            prepare(**cfg.generation_kwargs())
        except (ValueError, RuntimeError, OSError) as exc:
            raise PreflightError(f"{cfg.task}: {exc}") from None


def _longer(cfg: RunConfig, other: RunConfig | None) -> bool:
    """Probe with the run of the most agents x k (its first prompt is the longest we can pick cheaply)."""
    return other is None or cfg.agents * (cfg.k or 1) > other.agents * (other.k or 1)


def _first_messages(cfg: RunConfig | None) -> list[dict[str, str]] | None:
    if cfg is None:
        return None
    try:
        return cfg.first_messages()
    except Exception as exc:  # noqa: BLE001 - a task whose prompt needs more than the config (probe with PING)
        log.info("preflight: first prompt of %s not rendered (%s); probing with a short prompt", cfg.task, exc)
        return None


def note_probes(cfgs: Sequence[RunConfig], probes: list[dict[str, Any]]) -> None:
    """Append what the probes found to each results_dir's preflight.jsonl."""
    if not probes:
        return
    lines = "".join(json.dumps({"time": time.time(), **p}, sort_keys=True) + "\n" for p in probes)
    for results_dir in sorted({c.results_dir for c in cfgs}):
        try:
            with open(Path(results_dir).expanduser() / "preflight.jsonl", "a", encoding="utf-8") as out:
                out.write(lines)
        except OSError as exc:  # the results_dir check passed: a full disk, say; the runs can still go
            log.warning("preflight: could not note the probes in %s: %s", results_dir, exc)


def check_endpoint(settings: BackendSettings, completion: bool = True,
                   messages: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The models list names the served model; one 1-token completion of `messages` (the
    run's first prompt; default a short one) comes back and fits the served context.
    Returns what the probe found (max_model_len, the probe's usage)."""
    import asyncio

    import aiohttp

    base = (settings.base_url or "").rstrip("/")
    where = f"preflight {base} (model {settings.request_model})"
    timeout = min(PREFLIGHT_TIMEOUT_S, settings.timeout_s)
    found: dict[str, Any] = {"endpoint": base, "model": settings.request_model, "route": "http"}
    try:
        asyncio.run(_probe(settings, base, completion, timeout, messages or PING, found))
    except PreflightError as exc:
        note = key_note(settings) if exc.status in (401, 403) else ""
        raise PreflightError(f"{where}: {exc}{note}", exc.status) from None
    except aiohttp.ClientConnectorError as exc:
        refused = isinstance(exc.os_error, ConnectionRefusedError)
        reason = "connection refused" if refused else _reason(exc)
        raise PreflightError(f"{where}: cannot connect: {reason}") from None
    except TimeoutError:
        raise PreflightError(f"{where}: no answer within {timeout:g} s (timeout)") from None
    except (aiohttp.ClientError, ValueError) as exc:  # ValueError: a malformed URL
        raise PreflightError(f"{where}: {type(exc).__name__}: {_reason(exc)}") from None
    return found


async def _probe(settings: BackendSettings, base: str, completion: bool, timeout: float,
                 messages: list[dict[str, str]], found: dict[str, Any]) -> None:
    import aiohttp

    from masgrid._private.actors.backends.openai_chat import api_key, request_body

    headers = {"Authorization": f"Bearer {api_key(settings)}"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout), headers=headers) as session:
        async with session.get(f"{base}/models") as response:
            listed = await _json(response, "GET /models")
        data = listed.get("data") if isinstance(listed, dict) else None
        if not isinstance(data, list):
            raise PreflightError(f"GET /models: malformed reply (no `data` list): {str(listed)[:200]}")
        ids = [str(m.get("id")) for m in data if isinstance(m, dict)]
        if settings.request_model not in ids:  # refused even if a call would answer: a server that ignores the
            # model field (llama.cpp's) would record another model's answers under this name
            raise PreflightError(f"model {settings.request_model} not listed; the server serves "
                                 f"{', '.join(ids) or 'no model'} (model.served_name, else model.name, is the id sent)")
        entry = next(m for m in data if isinstance(m, dict) and str(m.get("id")) == settings.request_model)
        found["max_model_len"] = context = served_context(entry)
        check_max_tokens(settings, context)
        if not completion:
            return
        body = request_body(settings.model_copy(update={"max_tokens": 1}), messages)
        async with session.post(f"{base}/chat/completions", json=body) as response:
            reply = await _json(response, "1-token completion")
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict) and "message" in choices[0]):
            raise PreflightError(f"1-token completion: malformed reply (no choices[0].message): {str(reply)[:200]}")
        check_fits(settings, context, _probe_usage(reply, messages is not PING, found))


def served_context(entry: dict[str, Any]) -> int | None:
    """The context a models-list entry states: vLLM's `max_model_len`, Ray Serve LLM's
    `metadata.max_request_context_length`; None when the server states none."""
    metadata = entry.get("metadata")
    meta: dict[str, Any] = metadata if isinstance(metadata, dict) else {}
    for value in (entry.get("max_model_len"), meta.get("max_request_context_length")):
        if type(value) is int and value > 0:
            return value
    return None


def check_max_tokens(settings: BackendSettings, context: int | None) -> None:
    if context is None:
        return
    if settings.max_tokens is not None and settings.max_tokens >= context:
        raise PreflightError(f"model.max_tokens={settings.max_tokens} leaves no room for a prompt in the served "
                             f"context of {context} tokens (max_model_len); lower model.max_tokens")
    if settings.max_tokens is None:
        log.warning("model.max_tokens is unset: a reply of model %s may fill the rest of its %d-token context; "
                    "a model that does not stop then leaves no room for the next prompt", settings.request_model,
                    context)


def _probe_usage(reply: dict[str, Any], first_prompt: bool, found: dict[str, Any]) -> int | None:
    reported = reply.get("usage")
    usage: dict[str, Any] = reported if isinstance(reported, dict) else {}
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    found.update(probe="first_prompt" if first_prompt else "ping",
                 prompt_tokens=prompt if type(prompt) is int else None,
                 completion_tokens=completion if type(completion) is int else None)
    return found["prompt_tokens"] if first_prompt else None


def check_fits(settings: BackendSettings, context: int | None, prompt: int | None) -> None:
    """The first prompt, as the server counted it, plus max_tokens must fit the context."""
    if context is None or prompt is None:
        return
    need = prompt + (settings.max_tokens or 0)
    if need > context:
        raise PreflightError(f"the run's first prompt is {prompt} tokens and model.max_tokens is "
                             f"{settings.max_tokens}: {need} exceeds the served context of {context} tokens "
                             "(max_model_len); shorten the prompt (fewer agents or k) or lower model.max_tokens")


async def _json(response: Any, what: str) -> Any:
    text = await response.text()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
        if response.status == 200:
            raise PreflightError(f"{what}: malformed reply (not JSON): {text[:200]!r}") from None
    if response.status != 200:
        raise PreflightError(f"{what}: HTTP {response.status}: {_server_message(data, text)}", response.status)
    return data


def key_note(settings: BackendSettings) -> str:
    """Where the refused key came from, without the key: the variable and whether it is set
    (unset or empty sends the placeholder key local servers accept)."""
    import os

    value = os.environ.get(settings.api_key_env)
    state = "is not set" if value is None else "is empty" if not value.strip() else "is set, and its key was refused"
    return f"; the key is read from ${settings.api_key_env} (model.api_key_env), which {state} here"


def _server_message(data: Any, text: str) -> str:
    """The server's own words: OpenAI-style error.message, FastAPI's detail, or the body."""
    if isinstance(data, dict):
        err = data.get("error", data)
        msg = err.get("message") if isinstance(err, dict) else err
        return " ".join(str(msg or data.get("detail") or data).split())[:200]
    return " ".join(text.split())[:200] or "(empty body)"


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]


def check_served(cfg: RunConfig, model: BackendSettings | None = None) -> dict[str, Any] | None:
    """backend=serve without base_url: deploy (or find) the app, then one check through it.
    `model`: the settings checked (a team member's); default the run's model."""
    import asyncio

    from masgrid._private.actors.serving.deploy import http_base_url, target
    from masgrid._private.actors.serving.spec import parse_serving
    from masgrid._private.platform.cluster.ray_session import ensure_ray
    from masgrid._private.platform.cluster.serve_apps import ensure_served

    model = model or cfg.model
    ensure_ray(cfg.execution.ray_address)
    ensure_served(model)
    spec = parse_serving(model.serving)
    if spec.route == "http":
        return check_endpoint(model.model_copy(update={"base_url": http_base_url(model, spec)}),
                              completion=spec.kind != "standin",
                              messages=_first_messages(cfg) if spec.kind != "standin" else None)
    if spec.kind == "standin":
        return None  # RUNNING (ensure_served) is the check: the stand-in only answers tagged agent requests
    from ray import serve

    from masgrid._private.actors.serving.handle_backend import HandleChatBackend
    from masgrid._private.envs.tokens import get_counter

    app, name = target(model, spec)
    where = f"preflight Serve app {app}/{name} (model {model.request_model})"
    # the context is read from the app's own OpenAI route (a proxy runs on every node)
    listed = _listed_context(http_base_url(model, spec), model)
    try:
        check_max_tokens(model, listed)
    except PreflightError as exc:
        raise PreflightError(f"{where}: {exc}") from None
    settings = model.model_copy(update={"max_tokens": 1, "max_retries": 0,
                                            "timeout_s": min(PREFLIGHT_TIMEOUT_S, model.timeout_s)})
    backend = HandleChatBackend(serve.get_deployment_handle(name, app_name=app), settings, spec,
                                get_counter("approx"), None)
    messages = _first_messages(cfg)
    result = asyncio.run(backend.complete(messages or PING))
    if result.error:
        raise PreflightError(f"{where}: 1-token call through the handle failed: {result.error}")
    found = {"endpoint": f"serve:{app}/{name}", "model": model.request_model, "route": "handle",
             "max_model_len": listed, "probe": "first_prompt" if messages else "ping",
             "prompt_tokens": result.tokens_in, "completion_tokens": result.tokens_out}
    try:
        check_fits(model, listed, result.tokens_in if messages else None)
    except PreflightError as exc:
        raise PreflightError(f"{where}: {exc}") from None
    return found


def _listed_context(base: str, settings: BackendSettings) -> int | None:
    """The served context from GET <base>/models, or None when that route does not answer."""
    from masgrid._private.platform.cluster.engine_alive import listed_models

    try:
        data = listed_models(base)
    except (OSError, ValueError):
        return None
    entry = next((m for m in data if str(m.get("id")) == settings.request_model), None)
    return served_context(entry) if entry else None
