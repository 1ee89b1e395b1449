"""Checks before a run or sweep starts anything: results_dir is writable, the model answers.

Without them a wrong port, an unlisted model name or a read-only results_dir shows up
minutes later as thousands of failed model calls or a traceback from the recorder actor.
Each distinct (base_url, served model) of a grid is checked once, over HTTP (aiohttp) with
a short timeout: the models list must name the served model, and one 1-token chat completion
(the run's own request body, sampling and extra_body included) must come back well formed.
`preflight=false` skips the endpoint checks. A scorer's own model (CooperBench's
`cooper.resolver_model`) is checked the same way, whatever the agents' backend. Last, a task's
own prerequisites on this machine (`prepare_runs`, e.g. CooperBench builds or checks its test
environment), so a sweep whose runs could not be scored stops before any agent starts.

backend=serve without a base_url: masgrid deploys the app first (`ensure_served`), then
checks it the way agents reach it: a vLLM app gets one 1-token call through the
DeploymentHandle (route=handle) or the HTTP checks on Serve's route (route=http). The CPU
stand-in only answers requests that carry an agent tag (it replays a scripted policy), so
for it the models list (route=http) or the app being RUNNING (route=handle) is the check.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Sequence

from masgrid.actors.backends.base import BackendSettings
from masgrid.platform.config import RunConfig
from masgrid.platform.scoring_model import scoring_endpoint

#: seconds one preflight request may take (bounded by model.timeout_s)
PREFLIGHT_TIMEOUT_S = 15.0
PING = [{"role": "user", "content": "Reply with the word ok."}]


class PreflightError(ValueError):
    """A check failed; the message is one line naming what and where."""


def check_results_dir(results_dir: str) -> None:
    """results_dir must accept a file; it is created if missing, but not its parent: a
    mistyped path would otherwise start a fresh sweep beside the one meant to resume."""
    path = Path(results_dir).expanduser()
    if path.exists() and not path.is_dir():
        raise PreflightError(f"results_dir {results_dir}: not a directory")
    if not path.exists() and not path.parent.is_dir():
        raise PreflightError(f"results_dir {results_dir}: its parent directory {path.parent} does not exist "
                             "(create it first)")
    try:
        path.mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".masgrid-write-check-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
        raise PreflightError(f"results_dir {results_dir}: not writable: {reason}{where}") from None


def preflight(cfgs: Sequence[RunConfig]) -> None:
    """Every check for these runs; raises PreflightError on the first failure."""
    for results_dir in sorted({c.results_dir for c in cfgs}):
        check_results_dir(results_dir)
    http: dict[tuple[str, str], BackendSettings] = {}
    served: dict[str, RunConfig] = {}
    for cfg in cfgs:
        own = scoring_endpoint(cfg) if cfg.preflight else None  # e.g. cooper.resolver_model, even for scripted agents
        if own is not None:
            http.setdefault((own.base_url or "", own.request_model), own)
        if not cfg.preflight or cfg.backend == "scripted":
            continue
        if cfg.model.base_url:  # backend=openai, or a Serve app someone else runs
            http.setdefault((cfg.model.base_url, cfg.model.request_model), cfg.model)
        else:
            served.setdefault(cfg.model.name, cfg)
    for settings in http.values():  # before Ray starts: fails in seconds
        check_endpoint(settings)
    for cfg in served.values():
        check_served(cfg)
    check_task_prerequisites(cfgs)  # last: it may build (e.g. pip-install a test environment) for minutes


def check_task_prerequisites(cfgs: Sequence[RunConfig]) -> None:
    """What a task's runs need on this machine before any agent starts (a task's optional
    `prepare_runs`, e.g. CooperBench's test environment): a failure is one line, nothing started."""
    from masgrid.envs.tasks import get_task

    for cfg in cfgs:
        prepare = getattr(get_task(cfg.task), "prepare_runs", None)
        if prepare is None:
            continue
        try:
            prepare(**cfg.generation_kwargs())
        except (ValueError, RuntimeError, OSError) as exc:
            raise PreflightError(f"{cfg.task}: {exc}") from None


def check_endpoint(settings: BackendSettings, completion: bool = True) -> None:
    """The models list names the served model; one 1-token completion comes back."""
    import asyncio

    import aiohttp

    base = (settings.base_url or "").rstrip("/")
    where = f"preflight {base} (model {settings.request_model})"
    timeout = min(PREFLIGHT_TIMEOUT_S, settings.timeout_s)
    try:
        asyncio.run(_probe(settings, base, completion, timeout))
    except PreflightError as exc:
        raise PreflightError(f"{where}: {exc}") from None
    except aiohttp.ClientConnectorError as exc:
        refused = isinstance(exc.os_error, ConnectionRefusedError)
        reason = "connection refused" if refused else _reason(exc)
        raise PreflightError(f"{where}: cannot connect: {reason}") from None
    except asyncio.TimeoutError:
        raise PreflightError(f"{where}: no answer within {timeout:g} s (timeout)") from None
    except (aiohttp.ClientError, ValueError) as exc:  # ValueError: a malformed URL
        raise PreflightError(f"{where}: {type(exc).__name__}: {_reason(exc)}") from None


async def _probe(settings: BackendSettings, base: str, completion: bool, timeout: float) -> None:
    import aiohttp

    from masgrid.actors.backends.openai_chat import api_key, request_body

    headers = {"Authorization": f"Bearer {api_key(settings)}"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout), headers=headers) as session:
        async with session.get(f"{base}/models") as response:
            listed = await _json(response, "GET /models")
        data = listed.get("data") if isinstance(listed, dict) else None
        if not isinstance(data, list):
            raise PreflightError(f"GET /models: malformed reply (no `data` list): {str(listed)[:200]}")
        ids = [str(m.get("id")) for m in data if isinstance(m, dict)]
        if settings.request_model not in ids:
            raise PreflightError(f"model not listed; the server serves {', '.join(ids) or 'no model'} "
                                 "(model.served_name names the model in requests)")
        if not completion:
            return
        body = request_body(settings.model_copy(update={"max_tokens": 1}), PING)
        async with session.post(f"{base}/chat/completions", json=body) as response:
            reply = await _json(response, "1-token completion")
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict) and "message" in choices[0]):
            raise PreflightError(f"1-token completion: malformed reply (no choices[0].message): {str(reply)[:200]}")


async def _json(response: Any, what: str) -> Any:
    text = await response.text()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
        if response.status == 200:
            raise PreflightError(f"{what}: malformed reply (not JSON): {text[:200]!r}") from None
    if response.status != 200:
        raise PreflightError(f"{what}: HTTP {response.status}: {_server_message(data, text)}")
    return data


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


def check_served(cfg: RunConfig) -> None:
    """backend=serve without base_url: deploy (or find) the app, then one check through it."""
    import asyncio

    from masgrid.actors.serving.deploy import http_base_url, target
    from masgrid.actors.serving.spec import parse_serving
    from masgrid.platform.launch import ensure_ray
    from masgrid.platform.serving import ensure_served

    ensure_ray(cfg.execution.ray_address)
    ensure_served(cfg.model)
    spec = parse_serving(cfg.model.serving)
    if spec.route == "http":
        check_endpoint(cfg.model.model_copy(update={"base_url": http_base_url(cfg.model, spec)}),
                       completion=spec.kind != "standin")
        return
    if spec.kind == "standin":
        return  # RUNNING (ensure_served) is the check: the stand-in only answers tagged agent requests
    from ray import serve

    from masgrid.actors.serving.handle_backend import HandleChatBackend
    from masgrid.envs.tokens import get_counter

    app, name = target(cfg.model, spec)
    settings = cfg.model.model_copy(update={"max_tokens": 1, "max_retries": 0,
                                            "timeout_s": min(PREFLIGHT_TIMEOUT_S, cfg.model.timeout_s)})
    backend = HandleChatBackend(serve.get_deployment_handle(name, app_name=app), settings, spec,
                                get_counter("approx"), None)
    result = asyncio.run(backend.complete(PING))
    if result.error:
        raise PreflightError(f"preflight Serve app {app}/{name} (model {cfg.model.request_model}): "
                             f"1-token call through the handle failed: {result.error}")
