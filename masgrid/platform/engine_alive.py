"""Whether a model endpoint still answers: the check that tells an engine lost mid-run from
a model whose calls failed (platform/driver.py, check_engine_kept)."""

from __future__ import annotations

import json
import urllib.request

from masgrid.actors.backends.base import BackendSettings

PROBE_TIMEOUT_S = 5.0


class EngineLost(RuntimeError):
    """The model endpoint stopped answering during a run: the platform's failure (interrupted)."""


def endpoint_problem(settings: BackendSettings) -> str | None:
    """None when the endpoint lists its model now, else what is wrong, in a few words.
    HTTP endpoints answer GET /models; a Serve app reached by handle must be RUNNING."""
    if settings.base_url:
        return _http_problem(settings.base_url)
    from masgrid.actors.serving.deploy import http_base_url
    from masgrid.actors.serving.spec import parse_serving

    spec = parse_serving(settings.serving)
    if spec.route == "http":
        return _http_problem(http_base_url(settings, spec))
    try:
        from ray import serve

        app = serve.status().applications.get(spec.app)
    except Exception as exc:  # noqa: BLE001 - Serve itself is gone
        return f"Serve does not answer: {type(exc).__name__}"
    state = str(app.status).rsplit(".", 1)[-1] if app is not None else "missing"
    return None if state == "RUNNING" else f"Serve app {spec.app} is {state}"


def listed_models(base_url: str) -> list[dict]:
    """GET <base_url>/models: the listed model entries (OSError, ValueError when it fails)."""
    with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=PROBE_TIMEOUT_S) as response:
        data = json.loads(response.read())
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError("no `data` list in the models reply")
    return [m for m in entries if isinstance(m, dict)]


def _http_problem(base_url: str) -> str | None:
    try:
        listed_models(base_url)
    except (OSError, ValueError) as exc:
        return f"GET {base_url.rstrip('/')}/models: {type(exc).__name__}: {exc}"[:200]
    return None
