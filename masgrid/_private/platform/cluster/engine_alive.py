"""Whether a model endpoint still answers: the check that tells an engine lost mid-run from
a model whose calls failed. A run probes its endpoint as soon as a call fails as if the
endpoint went away (`EngineWatch`, at most every `CHECK_EVERY_S`), and once more at its end
(platform/run/driver.py, check_engine_kept); a sweep stops starting runs against an endpoint a
run found gone (platform/sweeps/ray_runs.py).

A hosted provider's outage often leaves its models list answering while every chat call
fails with 5xx: after calls failed so (`http_5xx`), the probe also sends one 1-token call,
and a 5xx or a refused connection there is an outage too. A 4xx or a slow answer is not
(the endpoint answered, or is busy). The probes send the run's API key: a provider's
models list refuses a request without one."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.request
from collections.abc import Iterable

from masgrid._private.actors.backends.base import BackendSettings

log = logging.getLogger(__name__)
#: the smallest question an endpoint answers: what preflight and the liveness probe send
PING = [{"role": "user", "content": "Reply with the word ok."}]
PROBE_TIMEOUT_S = 5.0
#: a run probes its endpoint at most this often while its calls keep failing that way
CHECK_EVERY_S = 5.0
#: failures that may say the endpoint went away, not that the model answered badly: a
#: probe (GET /models, or the Serve app's state) decides (backends/errors.py has the classes)
LOST_CLASSES = frozenset({"connection_refused", "connection_error", "unreachable", "timeout", "backend_error",
                          "http_5xx"})
#: the class of calls the server answered with its own failure: the probe then makes a call too
SERVER_FAILED = "http_5xx"


class EngineLost(RuntimeError):
    """The model endpoint stopped answering during a run: the platform's failure (interrupted).
    `endpoint` names it, `problem` says what the probe found."""

    def __init__(self, message: str, endpoint: str | None = None, problem: str | None = None) -> None:
        super().__init__(message)
        self.endpoint, self.problem = endpoint, problem


def lost(settings: BackendSettings, problem: str, failed_calls: int) -> EngineLost:
    """The run's EngineLost: one line with the endpoint, the probe's finding and what to do."""
    return EngineLost(f"the model endpoint {endpoint_name(settings)} stopped answering during the run ({problem}); "
                      f"{failed_calls} calls failed: rerun with resume once it is back",
                      endpoint_name(settings), problem)


def endpoint_name(settings: BackendSettings) -> str:
    """The endpoint as runs share it: its base URL, Serve's OpenAI route, or `Serve app <name>`."""
    from masgrid._private.actors.serving.spec import parse_serving

    return http_base(settings) or f"Serve app {parse_serving(settings.serving).app}"


class EngineWatch:
    """One run's check, between rounds, that failed calls are not a lost endpoint: a call that
    failed in one of LOST_CLASSES has the run's endpoints probed (in threads, at once, at most
    every `every_s`), and a probe that finds one gone ends the run at once (EngineLost, naming
    it), instead of letting every later call fail, be retried and be counted as the agents'
    model failures. A mixed-model team has several endpoints; each is probed. `enabled` is
    false where nothing says the endpoints ever answered (no preflight) or there are none
    (scripted)."""

    def __init__(self, endpoints: BackendSettings | list[BackendSettings], enabled: bool,
                 every_s: float = CHECK_EVERY_S) -> None:
        self.endpoints = endpoints if isinstance(endpoints, list) else [endpoints]
        self.enabled, self.every_s = enabled and bool(self.endpoints), every_s
        self.failed = 0
        self.last_probe = -float("inf")

    async def check(self, error_classes: Iterable[str | None]) -> None:
        classes = list(error_classes)
        lost_now = sum(1 for cls in classes if cls in LOST_CLASSES)
        self.failed += lost_now
        if not self.enabled or not lost_now or time.monotonic() - self.last_probe < self.every_s:
            return
        self.last_probe = time.monotonic()
        server_failed = SERVER_FAILED in classes
        problems = await asyncio.gather(*(asyncio.to_thread(probe, s, server_failed) for s in self.endpoints))
        for settings, problem in zip(self.endpoints, problems):
            if problem is not None:
                log.info("model endpoint %s lost: %s", endpoint_name(settings), problem)
                raise lost(settings, problem, self.failed)


def probe(settings: BackendSettings, server_failed: bool) -> str | None:
    """What is wrong with the endpoint now (None: nothing found): its models list, and, once
    calls failed with the server's own 5xx, one call as well."""
    return endpoint_problem(settings) or (chat_problem(settings) if server_failed else None)


def http_base(settings: BackendSettings) -> str | None:
    """The OpenAI-style base URL the agents call; None for a Serve app reached by handle."""
    if settings.base_url:
        return settings.base_url.rstrip("/")
    from masgrid._private.actors.serving.deploy import http_base_url
    from masgrid._private.actors.serving.spec import parse_serving

    spec = parse_serving(settings.serving)
    return http_base_url(settings, spec).rstrip("/") if spec.route == "http" else None


def endpoint_problem(settings: BackendSettings) -> str | None:
    """None when the endpoint lists its model now, else what is wrong, in a few words.
    HTTP endpoints answer GET /models; a Serve app reached by handle must be RUNNING."""
    from masgrid._private.actors.backends.openai_chat import api_key
    from masgrid._private.actors.serving.spec import parse_serving

    base = http_base(settings)
    if base is not None:
        return _http_problem(base, api_key(settings))
    spec = parse_serving(settings.serving)
    try:
        from ray import serve

        app = serve.status().applications.get(spec.app)
    except Exception as exc:  # noqa: BLE001 - Serve itself is gone
        return f"Serve does not answer: {type(exc).__name__}"
    state = str(app.status).rsplit(".", 1)[-1] if app is not None else "missing"
    return None if state == "RUNNING" else f"Serve app {spec.app} is {state}"


def listed_models(base_url: str, key: str | None = None) -> list[dict]:
    """GET <base_url>/models, with the API key when given: the listed model entries (OSError,
    ValueError when it fails)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    request = urllib.request.Request(f"{base_url.rstrip('/')}/models", headers=headers)
    with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:
        data = json.loads(response.read())
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError("no `data` list in the models reply")
    return [m for m in entries if isinstance(m, dict)]


def _http_problem(base_url: str, key: str) -> str | None:
    try:
        listed_models(base_url, key)
    except (OSError, ValueError) as exc:
        return f"GET {base_url.rstrip('/')}/models: {type(exc).__name__}: {exc}"[:200]
    return None


def chat_problem(settings: BackendSettings) -> str | None:
    """One 1-token call with the run's request settings: None when the server answers it, or
    answers with a 4xx (its answer to this request), or is too slow to tell (a busy engine
    queues the probe too), or drops the connection mid-answer; else the 5xx, or why no
    connection could be made, in a few words."""
    import urllib.error

    from masgrid._private.actors.backends.errors import server_message
    from masgrid._private.actors.backends.openai_chat import api_key, request_body

    base = http_base(settings)
    if base is None:
        return None
    where = f"POST {base}/chat/completions"
    body = json.dumps(request_body(settings.model_copy(update={"max_tokens": 1}), PING)).encode()
    request = urllib.request.Request(f"{base}/chat/completions", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {api_key(settings)}"})
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        return f"{where}: HTTP {exc.code}: {server_message(exc.read())}"[:200] if exc.code >= 500 else None
    except urllib.error.URLError as exc:  # before the request was sent: refused, or no route
        reason = exc.reason
        return f"{where}: {reason}"[:200] if isinstance(reason, OSError) and not isinstance(reason, TimeoutError) \
            else None
    except OSError:  # a timeout, or a connection dropped mid-answer: not proof of an outage
        return None
    return None
