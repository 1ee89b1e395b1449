"""`execution.prefix_cache=reset_per_run`: empty the engine's prefix cache before each run.

For studies of latency or cache behaviour, where what an earlier run left in the cache would
confound a later run. The sweep resets every engine a run calls right before starting it and
runs one run at a time per engine (platform/sweeps/admission.py); the run records
`prefix_cache_reset=true`.

- An OpenAI endpoint (`model.base_url`): vLLM's `POST <root>/reset_prefix_cache`, which vLLM
  serves only when the server was started with `VLLM_SERVER_DEV_MODE=1`; a 404 is one line at
  preflight saying so. vLLM answers `{"success": false}` while blocks are still held (requests
  running); that is retried for a few seconds, then refused.
- A Serve LLM app masgrid deployed (`backend=serve`): `LLMServer.reset_prefix_cache` on
  every replica of the deployment (Ray Serve LLM's replica broadcast), and the number of
  replicas that answered must equal the number Serve reports running. Ray's LLMServer does not
  pass vLLM's success flag on, so a reset refused there is not seen.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request

from masgrid._private.actors.backends.base import BackendSettings

log = logging.getLogger(__name__)
TIMEOUT_S = 10.0
#: seconds to retry a reset the engine refused (blocks still held by finishing requests)
RETRY_FOR_S = 5.0


class PrefixCacheResetError(RuntimeError):
    """A reset that could not be made; the message is one line naming the endpoint and what to do."""


def reset_url(base_url: str) -> str:
    return f"{base_url.rstrip('/').removesuffix('/v1')}/reset_prefix_cache"


def reset_prefix_cache(settings: BackendSettings) -> int:
    """Reset the prefix cache behind one endpoint; returns the engines (replicas) reset."""
    if settings.base_url:
        _reset_http(settings.base_url)
        return 1
    return _reset_serve(settings)


def _reset_http(base_url: str) -> None:
    url = reset_url(base_url)
    deadline = time.monotonic() + RETRY_FOR_S
    while True:
        request = urllib.request.Request(url, b"", method="POST")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 405):
                raise PrefixCacheResetError(
                    f"execution.prefix_cache=reset_per_run: POST {url} answered HTTP {exc.code}: the server offers no "
                    "prefix-cache reset (vLLM serves /reset_prefix_cache only when started with VLLM_SERVER_DEV_MODE=1 "
                    "in its environment); restart it so, or use execution.prefix_cache=shared") from None
            raise PrefixCacheResetError(f"execution.prefix_cache=reset_per_run: POST {url}: HTTP {exc.code}") from None
        except (OSError, ValueError) as exc:
            raise PrefixCacheResetError(f"execution.prefix_cache=reset_per_run: POST {url}: "
                                        f"{type(exc).__name__}: {exc}"[:300]) from None
        try:
            success = json.loads(body or b"{}").get("success", True)
        except (ValueError, AttributeError):
            success = True  # an older vLLM answers 200 with no body
        if success is not False:
            return
        if time.monotonic() > deadline:
            raise PrefixCacheResetError(f"execution.prefix_cache=reset_per_run: POST {url}: the engine refused the "
                                        f"reset for {RETRY_FOR_S:g} s (requests still running on it?)")
        time.sleep(0.2)


def _reset_serve(settings: BackendSettings) -> int:
    from ray import serve

    from masgrid._private.actors.serving.deploy import target
    from masgrid._private.actors.serving.spec import parse_serving

    spec = parse_serving(settings.serving)
    app, deployment = target(settings, spec)
    where = f"execution.prefix_cache=reset_per_run: Serve app {app}/{deployment}"
    if spec.kind != "vllm":
        raise PrefixCacheResetError(f"{where}: the {spec.kind} deployment has no prefix cache to reset; use "
                                    "execution.prefix_cache=shared")
    try:
        from ray.llm._internal.serve.utils.broadcast import broadcast
    except ImportError:
        raise PrefixCacheResetError(f"{where}: this Ray has no Serve LLM replica broadcast (Ray >= 2.60 has); use "
                                    "execution.prefix_cache=shared") from None
    status = serve.status().applications.get(app)
    running = 0
    if status is not None and deployment in status.deployments:
        states = status.deployments[deployment].replica_states
        running = sum(n for state, n in states.items() if str(state).rsplit(".", 1)[-1] == "RUNNING")
    if running == 0:
        raise PrefixCacheResetError(f"{where}: no running replica")
    try:
        answers = broadcast(serve.get_deployment_handle(deployment, app_name=app), "reset_prefix_cache")
    except Exception as exc:  # noqa: BLE001 - Ray's error, in one line
        raise PrefixCacheResetError(f"{where}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                                    [:300]) from None
    if len(answers) < running:
        raise PrefixCacheResetError(f"{where}: {len(answers)} of {running} running replicas were reset")
    return len(answers)
