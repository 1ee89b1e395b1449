"""Telling the replicas of a Serve LLM deployment apart from outside masgrid.

Two sources, neither of them masgrid's records:
- Serve's names: each replica is a named Ray actor, `SERVE_REPLICA::<app>#<deployment>#<id>`
  in namespace `serve` (ray.util.list_named_actors needs no dashboard);
- the engines' own counters: Serve LLM hands vLLM's Prometheus metrics to Ray's metrics
  (`LLMConfig.log_engine_metrics`, on by default), each tagged with the replica's id, and the
  node's metrics agent serves them as `ray_vllm_<counter>{ReplicaId="<id>",...}` (a head
  started without the dashboard has the agent too). A counter appears only once its engine
  has counted something: absent reads as 0.
Serve's per-replica access lines (`CALL chat OK <ms>`, with the replica id) are no source
here: with Ray 2.60 they reached the replicas' console output, streamed to the driver, but
not their files under `logs/serve/` (two lines each, no requests, when last looked at).
"""

from __future__ import annotations

import re
import time
import urllib.request

REPLICA_PREFIX = "SERVE_REPLICA::"
#: vLLM counters read per replica (the names vLLM gives them, under Ray's `ray_` prefix)
COUNTERS = ("prompt_tokens_total", "generation_tokens_total", "prefix_cache_hits_total",
            "prefix_cache_queries_total", "request_success_total")


def replica_ids(app: str, deployment: str) -> list[str]:
    """Unique ids of the deployment's live replicas, from the names of their actors."""
    import ray

    prefix = f"{REPLICA_PREFIX}{app}#{deployment}#"
    return sorted(a["name"].removeprefix(prefix) for a in ray.util.list_named_actors(all_namespaces=True)
                  if a["name"].startswith(prefix))


def metrics_url() -> str:
    """The Prometheus endpoint of this node's metrics agent."""
    import ray

    node = next(n for n in ray.nodes() if n["Alive"])
    return f"http://{node['NodeManagerAddress']}:{node['MetricsExportPort']}/metrics"


def engine_counters(ids: list[str], url: str | None = None) -> dict[str, dict[str, float]]:
    """{replica id: {counter: value}} for the given replicas, from the engines' metrics as Ray
    exports them (summed over the other labels: model name, engine index, finish reason)."""
    with urllib.request.urlopen(url or metrics_url(), timeout=10) as response:
        text = response.read().decode()
    out = {rid: dict.fromkeys(COUNTERS, 0.0) for rid in ids}
    for name in COUNTERS:
        for labels, value in re.findall(rf"^ray_vllm_{name}\{{([^}}]*)\}} ([0-9.e+]+)$", text, re.MULTILINE):
            rid = re.search(r'ReplicaId="([^"]*)"', labels)
            if rid is not None and rid.group(1) in out:
                out[rid.group(1)][name] += float(value)
    return out


def settled_counters(ids: list[str], requests: float = 0, timeout_s: float = 60.0,
                     url: str | None = None) -> dict[str, dict[str, float]]:
    """engine_counters once the replicas' successful requests add up to at least `requests`:
    Ray's metrics agent receives them every few seconds, so a read right after the last
    reply can be behind."""
    deadline = time.monotonic() + timeout_s
    while True:
        counters = engine_counters(ids, url)
        done = sum(c["request_success_total"] for c in counters.values())
        if done >= requests:
            return counters
        if time.monotonic() > deadline:
            raise AssertionError(f"the engines' counters show {done:g} successful requests, not {requests:g}, "
                                 f"{timeout_s:.0f} s after the last reply: {counters}")
        time.sleep(1.0)


def quiet_counters(ids: list[str], quiet_s: float = 12.0, timeout_s: float = 90.0,
                   url: str | None = None) -> dict[str, dict[str, float]]:
    """engine_counters once they have not changed for `quiet_s` (longer than Ray's 10 s metrics
    report interval): a starting point for differences when earlier calls, whose count is not
    known here, may still be on their way to the metrics agent."""
    deadline = time.monotonic() + timeout_s
    counters, since = engine_counters(ids, url), time.monotonic()
    while time.monotonic() - since < quiet_s:
        if time.monotonic() > deadline:
            raise AssertionError(f"the engines' counters were still changing {timeout_s:.0f} s on: {counters}")
        time.sleep(1.0)
        now = engine_counters(ids, url)
        if now != counters:
            counters, since = now, time.monotonic()
    return counters


_TOKENS = re.compile(r"^ray_vllm[:_](prompt_tokens|generation_tokens)(?:_total)?\{([^}]*)\} ([0-9.e+]+)$", re.MULTILINE)


def model_counters(metrics_port: int, host: str = "127.0.0.1") -> dict[str, dict[str, float]]:
    """served model -> {prompt_tokens, generation_tokens} from one node's metrics agent, summed
    over the series of its engines; {} while the agent does not answer."""
    try:
        with urllib.request.urlopen(f"http://{host}:{metrics_port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    out: dict[str, dict[str, float]] = {}
    for name, labels, value in _TOKENS.findall(text):
        model = dict(re.findall(r'(\w+)="([^"]*)"', labels)).get("model_name", "?")
        entry = out.setdefault(model, {})
        entry[name] = entry.get(name, 0.0) + float(value)
    return out
