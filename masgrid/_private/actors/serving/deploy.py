"""Deploying a `model` preset on Ray Serve: the vLLM path through `ray.serve.llm`, or the
CPU stand-in. `describe()` is the dry run: the resolved Serve configuration and the
placement of engine workers, computed without Ray, vLLM or the weights.
"""

from __future__ import annotations

import logging
import re
import time
from contextlib import nullcontext
from typing import Any

from masgrid._private.actors import heap
from masgrid._private.actors.backends.base import BackendSettings
from masgrid._private.actors.serving.engine_start import EngineStartWatch, explain, settled
from masgrid._private.actors.serving.spec import ServingError, ServingSpec, ServingUnavailable, parse_serving
from masgrid._private.actors.serving.standin import StandinCore, build_app

log = logging.getLogger(__name__)
STANDIN_DEPLOYMENT = "StandIn"
VLLM_HINT = ("model.serving.kind=vllm needs vLLM: on the GPU nodes run `pip install 'masgrid[vllm]'` "
             "(ray[llm], which brings vLLM); CPU machines use model=standin")


def serve_llm() -> tuple[Any, Any]:
    """(LLMConfig, build_openai_app) from ray.serve.llm, or a one-line install hint.
    vLLM is looked up first: importing ray.serve.llm without it logs tracebacks."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise ServingUnavailable(VLLM_HINT)
    try:
        from ray.serve.llm import LLMConfig, build_openai_app
    except ImportError:
        raise ServingUnavailable(VLLM_HINT) from None
    return LLMConfig, build_openai_app


class StandinDeployment:
    """Serve replica of the stand-in: OpenAI routes over HTTP, `chat` for handle calls."""

    def __init__(self, spec: dict[str, Any], served_name: str) -> None:
        from masgrid._private.actors.serving.spec import StandinSpec

        self.core = StandinCore(StandinSpec.model_validate(spec), served_name)
        heap.settle()

    def __serve_build_asgi_app__(self) -> Any:
        return build_app(self.core)

    async def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self.core.chat(body)

    def calls(self) -> int:
        return self.core.calls


def target(settings: BackendSettings, spec: ServingSpec) -> tuple[str, str]:
    """(app, deployment) that handle calls go to; `model.deployment` may name either."""
    app = spec.app
    name = STANDIN_DEPLOYMENT if spec.kind == "standin" else spec.llm_deployment_name(settings.request_model)
    if settings.deployment:
        app, _, dep = settings.deployment.partition("/")
        name = dep or name
    return app, name


def http_base_url(settings: BackendSettings, spec: ServingSpec) -> str:
    """Serve's OpenAI route: a proxy runs on every node, so loopback works cluster-wide."""
    if settings.base_url:
        return settings.base_url
    return f"http://127.0.0.1:{spec.http_port}{spec.route_prefix.rstrip('/')}/v1"


def build_application(settings: BackendSettings, spec: ServingSpec, replicas: int | None = None) -> Any:
    from ray import serve

    if spec.kind == "standin":
        options: dict[str, Any] = {"name": STANDIN_DEPLOYMENT, "max_ongoing_requests": spec.max_ongoing_requests,
                                   "ray_actor_options": {"num_cpus": spec.standin.cpus}}
        if spec.autoscaling:
            options["autoscaling_config"] = spec.autoscaling.model_dump()
        else:
            options["num_replicas"] = replicas or spec.max_replicas
        cls = serve.deployment(serve.ingress()(StandinDeployment), **options)
        return cls.bind(spec.standin.model_dump(), settings.request_model)  # type: ignore[attr-defined]  # untyped Serve decorator
    LLMConfig, build_openai_app = serve_llm()
    spec.check_weights()
    args = spec.openai_app_args(settings.request_model, replicas)
    args["llm_configs"] = [LLMConfig(**config) for config in args["llm_configs"]]
    if spec.release == "sleep":  # Serve LLM's ingress with the /sleep and /wakeup control routes
        from ray.llm._internal.serve.core.ingress.dev_ingress import build_dev_openai_app

        return build_dev_openai_app(args)
    return build_openai_app(args)


def deploy(settings: BackendSettings, http_host: str = "127.0.0.1", replicas: int | None = None) -> ServingSpec:
    """Start (or update) the Serve application of a model preset; returns once it is running
    (`replicas`: the count a model phase chose for replicas=auto, else the preset's).
    A vLLM engine that cannot start is one line with its own reason (engine_start.py), the
    app deleted; too little memory for the KV cache ends the deployment as soon as it says so."""
    from ray import serve

    spec = parse_serving(settings.serving)
    if spec.kind == "vllm":
        serve_llm()
        spec.check_weights()  # before anything is scheduled
        spec.check_kv_cache()
    app = _pickle_race_retried(lambda: build_application(settings, spec, replicas))
    check_http_port(spec, http_host)
    serve.start(http_options={"host": http_host, "port": spec.http_port})

    with (EngineStartWatch(spec.app) if spec.kind == "vllm" else nullcontext()) as watch:
        try:
            _pickle_race_retried(lambda: run_app(app, spec, watch))
        except RuntimeError as exc:  # a replica that cannot start: say why in one line, leave no engine behind
            cause = watch.cause if watch is not None else None
            if cause is not None:
                reason = explain(cause, spec.kv_cache_gib if spec.accelerator == "cpu" else None)
            else:
                reason = deploy_failure(spec.app) or str(exc).splitlines()[-1]
            try:
                serve.delete(spec.app)  # waits until its replicas, and their engines, are stopped
            except Exception:  # noqa: BLE001 - already gone
                pass
            error = EngineRefused(f"model.serving: Serve app {spec.app!r} did not start: {reason}")
            if watch is not None and watch.seen_at is not None:
                error.after_s = time.monotonic() - watch.seen_at
                log.debug("Serve app %s deleted %.1f s after its engine refused to start", spec.app, error.after_s)
            raise error from None
    return spec


def _pickle_race_retried(step: Any, attempts: int = 4) -> Any:
    """Run `step`, again when Ray Serve's config building lost a race with another thread of
    this process. Serve registers a router's module for cloudpickle's by-value pickling, pickles
    the class and unregisters it (serve/config.py), with no lock: a Serve handle's router thread
    doing the same while a model phase deploys the next app makes the second unregister raise
    `ValueError: <module ...> is not registered for pickle by value` (seen in the test suite
    right after the previous phase's app was deleted). Nothing was deployed then, so it is safe
    to repeat."""
    for attempt in range(attempts):
        try:
            return step()
        except ValueError as exc:
            if "registered for pickle by value" not in str(exc) or attempt == attempts - 1:
                raise
            log.debug("Serve's pickling race (%s); building again", exc)
            time.sleep(0.2 * (attempt + 1))
    return None


def run_app(app: Any, spec: ServingSpec, watch: EngineStartWatch | None, poll_s: float = 0.5) -> None:
    """serve.run, waiting here instead of in Serve: the wait also ends (RuntimeError) as soon
    as the engine has said why it cannot start where a retry cannot help (engine_start.settled),
    instead of after Serve's next attempt failed the same way."""
    from ray import serve

    serve.run_many([serve.RunTarget(target=app, name=spec.app, route_prefix=spec.route_prefix)],
                   wait_for_ingress_deployment_creation=False, wait_for_applications_running=False)
    pending_since: float | None = None
    while True:
        status = serve.status().applications.get(spec.app)
        state = str(status.status).rsplit(".", 1)[-1] if status is not None else "MISSING"
        if state == "RUNNING":
            _wait_for_proxies()
            return
        if state == "DEPLOY_FAILED":
            raise RuntimeError(f"Deploying application {spec.app} failed: {status.message if status is not None else ''}")
        if state == "MISSING":
            raise RuntimeError(f"Serve app {spec.app} was deleted while it deployed")
        if watch is not None and watch.cause is not None and settled(watch.cause):
            raise RuntimeError(watch.cause)
        pending = unplaced_replicas(spec.app)
        pending_since = (pending_since or time.monotonic()) if pending else None
        if pending and pending_since is not None and time.monotonic() - pending_since > spec.placement_timeout_s:
            raise RuntimeError(f"Ray cannot place its replicas: {pending} pending for "
                               f"{spec.placement_timeout_s:.0f} s (model.serving.placement_timeout_s); "
                               f"free now: {free_resources()}")
        time.sleep(poll_s)


def unplaced_replicas(app: str) -> str | None:
    """The bundles of the app's replica placement groups Ray has not placed yet, in words
    (None when every group is placed, or the table cannot be read)."""
    import ray

    from masgrid._private.platform.sweeps.model_phases.demand import fmt_resources

    try:
        groups = ray.util.placement_group_table()
    except Exception:  # noqa: BLE001 - an API change must not fail a deployment
        return None
    waiting = []
    for info in groups.values():
        if str(info.get("name") or "").startswith(f"SERVE_REPLICA::{app}#") and info.get("state") in ("PENDING",
                                                                                                      "INFEASIBLE"):
            total: dict[str, float] = {}
            for bundle in (info.get("bundles") or {}).values():
                for key, amount in bundle.items():
                    total[key] = total.get(key, 0.0) + float(amount)
            waiting.append(fmt_resources(total))
    return f"{len(waiting)} replica(s) asking {' | '.join(sorted(set(waiting)))}" if waiting else None


def free_resources() -> str:
    """Ray's free resources, cluster-wide, in words."""
    import ray

    from masgrid._private.platform.sweeps.model_phases.demand import fmt_resources

    try:
        return fmt_resources({k: v for k, v in ray.available_resources().items()
                              if not k.startswith(("node:", "memory", "object_store_memory"))})
    except Exception:  # noqa: BLE001
        return "unknown"


def _wait_for_proxies() -> None:
    """What serve.run does last: wait until the HTTP proxies route to the new app (Serve's
    client method; a Ray without it goes on, the proxies follow within a second or so)."""
    try:
        from ray.serve.context import _get_global_client

        _get_global_client().wait_for_proxies_serving(wait_for_applications_running=True)  # type: ignore[union-attr]
    except (ImportError, AttributeError, TypeError) as exc:
        log.debug("not waiting for Serve's proxies: %s", exc)


class EngineRefused(ServingError):
    """A deployment whose replicas did not start; `after_s`: seconds from the engine's own
    report to the app's deletion (None when the engine's output was not seen)."""

    after_s: float | None = None


def deploy_failure(app: str) -> str | None:
    """The root cause a failed deployment reports: the last line of its status message
    that names an error (the engine's own words), else None."""
    from ray import serve

    try:
        status = serve.status().applications.get(app)
    except Exception:  # noqa: BLE001
        return None
    if status is None:
        return None
    texts = [d.message for d in status.deployments.values() if getattr(d, "message", "")] + [status.message or ""]
    for text in texts:
        lines = [line.strip() for line in text.splitlines() if line.strip() and "errors.pydantic.dev" not in line]
        raised = [line for line in lines if re.match(r"^[\w.]*(Error|Exception)\b", line)]
        named = raised or [line for line in lines if "rror" in line]
        if named:
            # a pydantic error names the field on one line and the reason on the next
            i = lines.index(named[-1])
            tail = lines[i + 1] if raised and i + 1 < len(lines) and not raised[-1].rstrip().endswith(")") else ""
            return " ".join(f"{named[-1]} {tail}".split())[:400]
    return None


def check_http_port(spec: ServingSpec, http_host: str = "127.0.0.1") -> None:
    """Serve's proxy must be able to bind `http_port`: a port another process holds would
    leave the proxy unbound and send the agents' HTTP calls to whatever listens there. A
    port this cluster's own proxy holds (Serve already running) is fine."""
    import socket

    from ray import serve

    try:
        if serve.status().proxies:
            return  # Serve runs here: the port is its own proxy's
    except Exception:  # noqa: BLE001 - no Serve instance in this cluster yet
        pass
    with socket.socket() as probe:
        probe.settimeout(1.0)
        if probe.connect_ex(("127.0.0.1" if http_host in ("0.0.0.0", "") else http_host, spec.http_port)) == 0:
            raise ServingError(f"model.serving.http_port: port {spec.http_port} is already in use by another "
                               "process (another Ray Serve, a vLLM server?); stop it or choose another port")


def describe(settings: BackendSettings, check_paths: bool = False) -> dict[str, Any]:
    """The dry run: everything `deploy` would do, resolved, without starting anything."""
    spec = parse_serving(settings.serving)
    app, dep = target(settings, spec)
    out: dict[str, Any] = {
        "model": settings.name, "served_name": settings.request_model, "kind": spec.kind,
        "serve": {"app": spec.app, "route_prefix": spec.route_prefix, "http_port": spec.http_port,
                  "openai_base_url": http_base_url(settings, spec), "handle_target": f"{app}/{dep}"},
        "agents_reach_it_by": spec.route,
    }
    if spec.kind == "standin":
        out["deployment"] = {"name": STANDIN_DEPLOYMENT, **spec.deployment_config(), "num_cpus": spec.standin.cpus,
                             "standin": spec.standin.model_dump()}
        return out
    weights_ok = True
    try:
        spec.check_weights(build=False)
        if check_paths:
            spec.check_kv_cache()
    except ServingError:
        if check_paths:
            raise
        weights_ok = False
    par, cl = spec.parallelism, spec.cluster
    out["llm_config"] = spec.llm_config_dict(settings.request_model)
    out["weights"] = {"path": spec.model_path, "present_here": weights_ok}
    out["cluster"] = cl.model_dump()
    out["placement"] = {
        "layout": spec.layout, "tensor_parallel_size": par.tensor_parallel_size,
        "pipeline_parallel_size": par.pipeline_parallel_size, "gpus_per_replica": par.gpus,
        "nodes_per_replica": spec.nodes_per_replica(), "replicas_max": spec.max_replicas,
        "tp_spans_nodes": par.tensor_parallel_size > cl.gpus_per_node,
        "workers": spec.placement(),
    }
    return out
