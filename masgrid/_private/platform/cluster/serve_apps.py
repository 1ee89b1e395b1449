"""The run-side check that a `backend=serve` deployment is up: deploy the preset's Serve app
when it is missing, wait for one that is still deploying."""

from __future__ import annotations

from masgrid._private.actors.backends.base import BackendSettings


def ensure_served(settings: BackendSettings, http_host: str = "127.0.0.1", wait_s: float = 3600.0) -> None:
    """Deploy the preset's Serve app unless an app of that name exists; one that is still
    deploying (a large model loading) is waited for, never redeployed."""
    import time

    from ray import serve

    from masgrid._private.actors.serving.deploy import deploy
    from masgrid._private.actors.serving.spec import ServingError, parse_serving

    spec = parse_serving(settings.serving)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            app = serve.status().applications.get(spec.app)
        except Exception:  # noqa: BLE001 - no Serve instance yet
            app = None
        state = str(app.status).rsplit(".", 1)[-1] if app is not None else "MISSING"
        if state == "RUNNING":
            return
        if state not in ("DEPLOYING", "UNHEALTHY") or time.monotonic() > deadline:
            break
        time.sleep(5)
    if state in ("DEPLOYING", "UNHEALTHY"):
        raise ServingError(f"model.serving.app: Serve app {spec.app!r} is still {state} after {wait_s:.0f}s")
    deploy(settings, http_host)
