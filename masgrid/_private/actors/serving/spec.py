"""What `model.serving` says about a deployment, validated offline before anything is scheduled.

`ray.serve.llm.LLMConfig` cannot even be imported without vLLM, so the GPU presets are
described by these pydantic models, which mirror the LLMConfig fields masgrid uses
(model_loading_config, engine_kwargs, deployment_config, placement_group_config,
accelerator_type, runtime_env). `llm_config_dict()` produces exactly the mapping that is
handed to `LLMConfig(**...)` on a GPU machine, and the dry run prints it.

Checks made here (each one an error naming the key, raised before Ray starts):
- weights come from an absolute local path (no hub ids, no cloud URIs);
- tensor x pipeline parallel size x replicas fits the allocation (nodes x GPUs per node);
- the architecture allows the split: attention heads divisible by TP, at least one layer
  per pipeline stage, max_model_len within the model's position range;
- the weight shard of one GPU fits in its share of memory (gpu_memory_utilization);
- on CPU, the KV cache (`kv_cache_gib`) holds one request of `engine.max_model_len`
  (`check_kv_cache`, from the model's config.json; deploy.py reads the engine's own
  refusal for what this arithmetic cannot tell).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Serve's own router class for prefix-cache affinity (ray.serve.llm.request_router).
PREFIX_ROUTER = "ray.serve.llm.request_router.PrefixCacheAffinityRouter"
#: the Serve LLM callback that skips the per-node download of a local model (serving/node_init.py);
#: named, not imported: this module never imports ray.llm
LOCAL_MODEL_CALLBACK = "masgrid._private.actors.serving.node_init.LocalModelInit"
#: the engine deployment's class: Serve LLM's LLMServer plus a plain-data handle method, so agent
#: hosts call it without importing vLLM (serving/plain_server.py); named, for the same reason
PLAIN_SERVER = "masgrid._private.actors.serving.plain_server.LLMServer"
_REMOTE_SOURCE = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


class ServingUnavailable(RuntimeError):
    """The vLLM path was asked for where vLLM is not installed (here, not in deploy.py, so
    `masgrid run` can catch it without importing the stand-in server's FastAPI)."""


class ServingError(ValueError):
    """A serving config that cannot be deployed; the message names the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Parallelism(_Strict):
    tensor_parallel_size: int = Field(1, ge=1)
    pipeline_parallel_size: int = Field(1, ge=1)

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size


class EngineSpec(_Strict):
    """vLLM engine arguments (LLMConfig.engine_kwargs); `extra` passes further knobs through."""

    max_model_len: int = Field(131072, ge=256)
    gpu_memory_utilization: float = Field(0.90, gt=0, le=1)
    enable_prefix_caching: bool = True
    dtype: str | None = None
    kv_cache_dtype: str | None = None
    trust_remote_code: bool = False
    chat_template: str | None = Field(None, description="local Jinja file; null keeps the model's own")
    tool_call_parser: str | None = Field(None, description="vLLM tool parser of the family (enables auto tool choice)")
    reasoning_parser: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Autoscaling(_Strict):
    min_replicas: int = Field(1, ge=0)
    max_replicas: int = Field(1, ge=1)
    target_ongoing_requests: int = Field(64, ge=1)


class ClusterSpec(_Strict):
    """The allocation the preset is sized for (MAS-Bench B.1: 4 nodes x 4 GH200, 120 GB each)."""

    nodes: int = Field(4, ge=1)
    gpus_per_node: int = Field(4, ge=1)
    cpus_per_node: int = Field(288, ge=1)
    gpu_memory_gb: float = Field(120.0, gt=0)

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


class Architecture(_Strict):
    """Published shape of the checkpoint, used only for the offline feasibility checks."""

    layers: int = Field(ge=1)
    attention_heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    max_position: int = Field(ge=1)
    weights_gb: float = Field(gt=0, description="checkpoint size on disk (all shards)")


class StandinSpec(_Strict):
    """The CPU stand-in: scripted policies behind the OpenAI protocol (tests, benchmarks)."""

    per_token_latency_s: float = Field(0.0, ge=0, description="simulated decode time per completion token")
    hang_agents: list[int] = Field(default_factory=list, description="fault injection: these agents' calls hang")
    hang_call: int = Field(1, ge=1, description="... at this call of theirs (1-based, per phase)")
    hang_attempts: int = Field(1, ge=0, description="... for this many attempts (then answer normally)")
    hang_s: float = Field(3600.0, gt=0)
    cpus: float = Field(0.0, ge=0, description="Ray CPUs each stand-in replica reserves (0: none); lets a test "
                        "or a rehearsal give stand-in models the footprint of real ones, so model phases plan them")


class PrefixRouterSpec(_Strict):
    """`model.serving.prefix_router`: how Serve LLM's PrefixCacheAffinityRouter weighs cache
    locality against load (the keyword arguments of its `initialize_state`, handed over as
    Serve's `request_router_kwargs`). The defaults are Ray 2.60's own, except that masgrid
    names them: with `imbalanced_threshold` null the router never looks at load when a
    prefix matches, so runs whose prompts share a long opening can all land on one replica
    (docs/serving.md, "Choosing the router")."""

    imbalanced_threshold: float | None = Field(
        None, ge=0, description="requests in flight by which the busiest replica may lead the idlest before the "
        "router ignores prefixes and balances load (Serve's power of two choices); null: never (Ray's default)")
    match_rate_threshold: float = Field(
        0.1, ge=0, le=1, description="share of a prompt's characters that must match a replica's earlier prompts "
        "for prefix routing; below it the request goes to the replica holding the least text")
    eviction: bool = Field(False, description="trim the router's prefix tree (one per deployment, in a Ray actor) "
                                              "when it exceeds eviction_threshold_chars; off, it grows for the app's life")
    eviction_threshold_chars: int = Field(400_000, ge=1)
    eviction_target_chars: int = Field(360_000, ge=0, description="what eviction trims the tree down to")
    eviction_interval_s: int = Field(10, ge=1, description="seconds between the tree's size checks")

    @model_validator(mode="after")
    def _check(self) -> PrefixRouterSpec:
        if self.eviction_target_chars > self.eviction_threshold_chars:
            raise ValueError(f"prefix_router.eviction_target_chars: {self.eviction_target_chars:,} exceeds "
                             f"eviction_threshold_chars {self.eviction_threshold_chars:,}")
        return self

    def router_kwargs(self) -> dict[str, Any]:
        """`request_router_kwargs` as the router's `initialize_state` names them."""
        out: dict[str, Any] = {"match_rate_threshold": self.match_rate_threshold, "do_eviction": self.eviction,
                               "eviction_threshold_chars": self.eviction_threshold_chars,
                               "eviction_target_chars": self.eviction_target_chars,
                               "eviction_interval_secs": self.eviction_interval_s}
        if self.imbalanced_threshold is not None:  # omitted: the router's own default, infinity
            out["imbalanced_threshold"] = self.imbalanced_threshold
        return out


class TinyBuild(_Strict):
    """`model.serving.tiny`: build the tiny random model into `model_path` when it is missing."""

    seed: int = 0


class ServingSpec(_Strict):
    """`model.serving`: how the model is deployed on Ray Serve and how agents reach it."""

    kind: Literal["standin", "vllm"] = "standin"
    accelerator: Literal["gpu", "cpu"] = Field(
        "gpu", description="gpu: engine workers take one GPU each; cpu: vLLM's CPU build, workers take "
        "`cpus_per_worker` CPUs and one core each for their threads (docs/serving.md)")
    kv_cache_gib: int = Field(1, ge=1, description="cpu only: KV-cache memory per engine in whole GiB (VLLM_CPU_KVCACHE_SPACE)")
    tiny: TinyBuild | None = Field(None, description="build the tiny random model at model_path if it is missing")
    route: Literal["handle", "http"] = Field("handle", description="DeploymentHandle (no HTTP hop) or the OpenAI route")
    app: str = Field("masgrid-llm", description="Serve application name")
    route_prefix: str = Field("/llm", description="HTTP prefix; the OpenAI API is at <prefix>/v1")
    http_port: int = Field(8000, ge=1, le=65535)
    replicas: int | Literal["auto"] = Field(
        1, description="engine replicas: a number, or `auto`: in a sweep's model phase, as many as the capacity "
        "the phase leaves free holds (at most `auto_replicas_max`; docs/model-phases.md); 1 outside a sweep")
    auto_replicas_max: int = Field(8, ge=1, description="replicas=auto: the most replicas one phase deploys")
    release: Literal["delete", "sleep"] = Field(
        "delete", description="how a sweep's model phase releases the model when the next phase does not need it: "
        "delete the Serve app, or (vLLM GPU builds with sleep mode) keep it asleep, weights off the accelerator")
    autoscaling: Autoscaling | None = None
    max_ongoing_requests: int = Field(256, ge=1)
    constructor_retries: int = Field(
        2, ge=1, description="Serve's attempts to start a replica (max_constructor_retry_count): an engine that "
        "cannot start (bad weights, no memory for the KV cache) fails the deploy after this many, not Serve's 20")
    router: Literal["default", "prefix_aware"] = Field(
        "default", description="default: Serve's power of two choices; prefix_aware: Serve LLM's "
        "PrefixCacheAffinityRouter (sends a prompt to the replica that saw its opening; docs/serving.md)")
    prefix_router: PrefixRouterSpec | None = Field(
        None, description="settings of the prefix-aware router (router=prefix_aware only); null: Ray's defaults")
    placement_timeout_s: float = Field(
        120.0, gt=0, description="a deployment whose replicas Ray cannot place (their placement groups pending) "
        "this long fails with the resources asked for and free, instead of waiting for capacity that never comes; "
        "raise it where an autoscaler adds nodes")
    # vLLM only ----------------------------------------------------------------------------
    model_path: str | None = Field(None, description="local directory holding the weights")
    layout: str | None = Field(None, description="key of `layouts` to use")
    layouts: dict[str, Parallelism] = Field(default_factory=dict)
    engine: EngineSpec = Field(default_factory=EngineSpec)
    accelerator_type: str | None = None
    placement_strategy: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] = "PACK"
    cpus_per_worker: float = Field(1.0, ge=0)
    gpus_per_worker: float = Field(1.0, gt=0, le=1, description="gpu: the GPU share of each engine worker; below 1, "
                                   "engines of several models may share GPUs (their gpu_memory_utilization must "
                                   "then add up to at most 1 per GPU among those awake: docs/model-phases.md)")
    replica_cpus: float | None = Field(
        None, ge=0, description="Ray CPUs of each engine replica's own actor (Serve LLM's LLMServer, placed in the "
        "first bundle beside the first worker's cpus_per_worker); null: Serve LLM's default, 1")
    ingress_cpus: float | None = Field(None, ge=0, description="Ray CPUs of the OpenAI ingress replica "
                                       "(null: Serve LLM's default, 1)")
    cluster: ClusterSpec = Field(default_factory=ClusterSpec)
    architecture: Architecture | None = None
    runtime_env: dict[str, Any] = Field(default_factory=dict)
    # stand-in only ------------------------------------------------------------------------
    standin: StandinSpec = Field(default_factory=StandinSpec)

    @model_validator(mode="after")
    def _check(self) -> ServingSpec:
        if not self.route_prefix.startswith("/"):
            raise ValueError("route_prefix: must start with '/'")
        if self.autoscaling and self.autoscaling.min_replicas > self.autoscaling.max_replicas:
            raise ValueError("autoscaling: min_replicas exceeds max_replicas")
        if self.autoscaling and self.replicas == "auto":
            raise ValueError("replicas: auto fills a model phase's free capacity; it does not go with autoscaling")
        if isinstance(self.replicas, int) and self.replicas < 1:
            raise ValueError("replicas: at least 1 (or auto)")
        if self.release == "sleep" and (self.kind != "vllm" or self.accelerator != "gpu"):
            raise ValueError("release: sleep needs vLLM's sleep mode, which only its GPU builds have; use delete")
        if self.kind == "vllm":
            self._check_vllm()
        elif self.router == "prefix_aware":  # Serve LLM's router class needs the vLLM install
            raise ValueError("router: prefix_aware routes between vLLM replicas; the stand-in uses Serve's default")
        if self.prefix_router is not None and self.router != "prefix_aware":
            raise ValueError("prefix_router: configures router=prefix_aware; with router=default it would be ignored")
        if self.replica_cpus is not None and self.kind != "vllm":
            raise ValueError("replica_cpus: sizes a vLLM replica's actor; a stand-in replica takes standin.cpus")
        return self

    # -- vLLM feasibility ------------------------------------------------------------------
    def _check_vllm(self) -> None:
        if not self.model_path:
            raise ValueError("model_path: a vLLM deployment needs the local directory of the weights")
        if _REMOTE_SOURCE.match(self.model_path) or not self.model_path.startswith("/"):
            raise ValueError(f"model_path: weights come from an absolute local path only, got {self.model_path!r}")
        if self.layout is not None and self.layout not in self.layouts:
            raise ValueError(f"layout: {self.layout!r} is not one of {sorted(self.layouts)}")
        par, cl = self.parallelism, self.cluster
        if self.accelerator == "cpu":
            if self.accelerator_type:
                raise ValueError("accelerator_type: names a GPU type; a cpu deployment takes none")
            return
        if self.max_replicas * par.gpus > cl.gpus:
            raise ValueError(f"layout: {self.max_replicas} replica(s) x TP {par.tensor_parallel_size} x PP "
                             f"{par.pipeline_parallel_size} need {self.max_replicas * par.gpus} GPUs, the cluster "
                             f"has {cl.nodes} x {cl.gpus_per_node} = {cl.gpus}")
        arch = self.architecture
        if arch is None:
            return
        tp, pp = par.tensor_parallel_size, par.pipeline_parallel_size
        if arch.attention_heads % tp:
            raise ValueError(f"layout: TP {tp} does not divide the model's {arch.attention_heads} attention heads")
        if tp < arch.kv_heads and arch.kv_heads % tp or tp > arch.kv_heads and tp % arch.kv_heads:
            raise ValueError(f"layout: TP {tp} cannot split or replicate {arch.kv_heads} KV heads evenly")
        if pp > arch.layers:
            raise ValueError(f"layout: PP {pp} exceeds the model's {arch.layers} layers")
        if self.engine.max_model_len > arch.max_position:
            raise ValueError(f"engine.max_model_len: {self.engine.max_model_len} exceeds the model's "
                             f"{arch.max_position} positions")
        per_gpu = arch.weights_gb / par.gpus
        budget = cl.gpu_memory_gb * self.engine.gpu_memory_utilization
        if per_gpu >= budget:
            raise ValueError(f"layout: {per_gpu:.0f} GB of weights per GPU do not fit in {budget:.0f} GB "
                             f"({cl.gpu_memory_gb:g} GB x gpu_memory_utilization)")

    @property
    def parallelism(self) -> Parallelism:
        if self.layout is None:
            return Parallelism()
        return self.layouts[self.layout]

    @property
    def max_replicas(self) -> int:
        """Replicas the deployment may reach outside a model phase (`auto` deploys one there)."""
        if self.autoscaling:
            return self.autoscaling.max_replicas
        return self.replicas if isinstance(self.replicas, int) else 1

    def check_weights(self, build: bool = True) -> None:
        """The weights directory must exist here (shared filesystem) with a config.json;
        a preset with `tiny` builds the tiny model there first when it is missing."""
        if self.kind != "vllm":
            return
        path = Path(self.model_path or "")
        if build and self.tiny is not None and not (path / "config.json").exists():
            from masgrid._private.actors.serving.tiny_model import TinySpec, build_tiny_model

            build_tiny_model(path, TinySpec(seed=self.tiny.seed))
        if not (path / "config.json").is_file():
            raise ServingError(f"model.serving.model_path: no model at {path} (expected a directory with config.json); "
                               "set MASGRID_MODELS or model.serving.model_path to the local weights")
        problem = model_dir_problem(path)
        if problem:
            raise ServingError(f"model.serving.model_path: {path}: {problem}")

    def check_kv_cache(self) -> None:
        """A CPU engine whose KV cache (`kv_cache_gib`) cannot hold one request of
        `engine.max_model_len` is refused before anything starts: the engine would load the
        weights first and only then say so. The arithmetic is a lower bound on what vLLM
        needs (no block rounding), so it refuses nothing the engine would accept; where the
        model's attention is not the plain kind it skips, and the engine's own check decides."""
        if self.kind != "vllm" or self.accelerator != "cpu":
            return
        import json

        try:
            config = json.loads((Path(self.model_path or "") / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # check_weights names it
        need = kv_bytes_per_token(config, self.engine, self.parallelism)
        if need is None:
            return
        per_token, shape = need
        have = self.kv_cache_gib * 2**30
        needed = per_token * self.engine.max_model_len
        if needed > have:
            raise ServingError(
                f"model.serving.kv_cache_gib: one request of engine.max_model_len={self.engine.max_model_len:,} tokens "
                f"needs at least {needed / 2**30:.2f} GiB of KV cache ({shape}), more than kv_cache_gib="
                f"{self.kv_cache_gib}: raise model.serving.kv_cache_gib or lower model.serving.engine.max_model_len "
                f"(at most about {have // per_token:,} tokens fit)")

    # -- Serve configuration ------------------------------------------------------------------
    def deployment_config(self, replicas: int | None = None) -> dict[str, Any]:
        """Ray Serve deployment options (LLMConfig.deployment_config); `replicas`: the count a
        model phase chose (replicas=auto), else the preset's."""
        out: dict[str, Any] = {"max_ongoing_requests": self.max_ongoing_requests,
                               "max_constructor_retry_count": self.constructor_retries}
        if self.autoscaling:
            out["autoscaling_config"] = self.autoscaling.model_dump()
        else:
            out["num_replicas"] = replicas or self.max_replicas
        if self.router == "prefix_aware":
            out["request_router_config"] = {"request_router_class": PREFIX_ROUTER}
            if self.prefix_router is not None:
                out["request_router_config"]["request_router_kwargs"] = self.prefix_router.router_kwargs()
        if self.replica_cpus is not None:  # Serve LLM adds it to the first placement bundle
            out["ray_actor_options"] = {"num_cpus": self.replica_cpus}
        return out

    def engine_kwargs(self) -> dict[str, Any]:
        e, par = self.engine, self.parallelism
        out: dict[str, Any] = {
            "tensor_parallel_size": par.tensor_parallel_size,
            "pipeline_parallel_size": par.pipeline_parallel_size,
            "max_model_len": e.max_model_len,
            "enable_prefix_caching": e.enable_prefix_caching,
            # cpu: vLLM's own worker processes (gloo), one core each; gpu: Ray workers in the placement group
            "distributed_executor_backend": "mp" if self.accelerator == "cpu" else "ray",
        }
        if self.accelerator == "gpu":
            out["gpu_memory_utilization"] = e.gpu_memory_utilization
        for key in ("dtype", "kv_cache_dtype", "chat_template", "reasoning_parser"):
            if getattr(e, key) is not None:
                out[key] = getattr(e, key)
        if e.trust_remote_code:
            out["trust_remote_code"] = True
        if e.tool_call_parser:
            out.update(tool_call_parser=e.tool_call_parser, enable_auto_tool_choice=True)
        if self.release == "sleep":  # a model phase puts the engine to sleep instead of deleting it
            out["enable_sleep_mode"] = True
        out.update(e.extra)
        return out

    def placement_group_config(self) -> dict[str, Any]:
        """One bundle per engine worker; an accelerator Ray has no enum value for (GH200)
        is pinned through the `accelerator_type:<name>` resource Ray gives such nodes."""
        if self.accelerator == "cpu":
            return {"bundle_per_worker": {"CPU": self.cpus_per_worker}, "strategy": self.placement_strategy}
        bundle: dict[str, float] = {"GPU": self.gpus_per_worker, "CPU": self.cpus_per_worker}
        if self.accelerator_type and not _ray_knows_accelerator(self.accelerator_type):
            bundle[f"accelerator_type:{self.accelerator_type}"] = 0.001
        return {"bundle_per_worker": bundle, "strategy": self.placement_strategy}

    def llm_config_dict(self, model_id: str, replicas: int | None = None) -> dict[str, Any]:
        """The keyword arguments of `ray.serve.llm.LLMConfig` for this deployment."""
        out: dict[str, Any] = {
            "model_loading_config": {"model_id": model_id, "model_source": self.model_path},
            "engine_kwargs": self.engine_kwargs(),
            "deployment_config": self.deployment_config(replicas),
            "placement_group_config": self.placement_group_config(),
            "server_cls": PLAIN_SERVER,
        }
        if self.model_path and os.path.isdir(self.model_path):
            # a model found here needs no per-node download task (serving/node_init.py); a path
            # only the engine nodes have keeps Serve LLM's own step
            out["callback_config"] = {"callback_class": LOCAL_MODEL_CALLBACK}
        if self.accelerator_type and _ray_knows_accelerator(self.accelerator_type):
            out["accelerator_type"] = self.accelerator_type
        runtime_env = dict(self.runtime_env)
        if self.accelerator == "cpu":
            out["accelerator_config"] = {"kind": "cpu"}
            runtime_env["env_vars"] = {**self.cpu_env(), **runtime_env.get("env_vars", {})}
        if runtime_env:
            out["runtime_env"] = runtime_env
        return out

    def cpu_env(self) -> dict[str, str]:
        """Environment of a CPU engine: its KV-cache size, no hub or usage-stats traffic, and
        one core per tensor-parallel rank (without an explicit binding vLLM looks for one NUMA
        node per rank and refuses TP=2 on a 2-core machine)."""
        tp = self.parallelism.tensor_parallel_size
        env = {"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib),
               "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "VLLM_LOGGING_LEVEL": "WARNING"}
        if tp > 1:
            env["VLLM_CPU_OMP_THREADS_BIND"] = "|".join(str(rank) for rank in range(tp))
        return env

    def openai_app_args(self, model_id: str, replicas: int | None = None) -> dict[str, Any]:
        """The builder arguments of `ray.serve.llm.build_openai_app`, LLMConfig as a mapping."""
        out: dict[str, Any] = {"llm_configs": [self.llm_config_dict(model_id, replicas)]}
        if self.ingress_cpus is not None:
            out["ingress_deployment_config"] = {"ray_actor_options": {"num_cpus": self.ingress_cpus}}
        return out

    def llm_deployment_name(self, model_id: str) -> str:
        """Name Serve LLM gives the engine deployment (its builder's `LLMServer:<id>` rule)."""
        return "LLMServer:" + model_id.replace("/", "--").replace(".", "_")

    def placement(self) -> list[dict[str, Any]]:
        """Where each engine worker of replica 0 lands under PACK on identical nodes:
        ranks fill node 0 first, so a TP group of <= gpus_per_node stays inside one node."""
        par, per_node = self.parallelism, self.cluster.gpus_per_node
        rows = []
        for rank in range(par.gpus):
            rows.append({"rank": rank, "node": rank // per_node, "gpu": rank % per_node,
                         "pp_stage": rank // par.tensor_parallel_size, "tp_rank": rank % par.tensor_parallel_size})
        return rows

    def nodes_per_replica(self) -> int:
        return math.ceil(self.parallelism.gpus / self.cluster.gpus_per_node)


def model_dir_problem(path: Path) -> str | None:
    """What makes a Hugging Face model directory unusable, found without loading it: a
    config.json that is no JSON object or names no architecture, no weight files, no
    tokenizer. None when it looks complete (the engine may still refuse it)."""
    import json

    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"config.json is not readable JSON ({exc})"
    if not isinstance(config, dict) or not (config.get("architectures") or config.get("model_type")):
        return "config.json names no architecture (architectures / model_type)"
    if not any(path.glob("*.safetensors")) and not any(path.glob("*.bin")) and not any(path.glob("*.pt")):
        return "no weight files (*.safetensors, *.bin)"
    if not any((path / name).is_file() for name in ("tokenizer.json", "tokenizer.model", "tokenizer_config.json")):
        return "no tokenizer (tokenizer.json, tokenizer.model or tokenizer_config.json)"
    return None


#: bytes per element of the dtypes a KV cache is kept in (vLLM's names)
_DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "fp8": 1, "fp8_e4m3": 1,
                "fp8_e5m2": 1, "fp8_inc": 1, "fp8_ds_mla": 1}
#: config keys of attention that is not one full K and V per layer and token (MLA, sliding
#: windows, hybrid linear attention): the KV arithmetic below does not apply
_OTHER_ATTENTION = ("kv_lora_rank", "full_attention_interval", "layers_block_type", "hybrid_override_pattern",
                    "attn_type_list", "linear_num_value_heads", "attention_chunk_size")


def kv_bytes_per_token(config: dict[str, Any], engine: EngineSpec, par: Parallelism) -> tuple[int, str] | None:
    """(bytes of KV cache one token needs on the busiest engine rank, how that was computed)
    from a Hugging Face config.json, or None where the model's attention is not plain
    full attention. Lower bound: an "auto" dtype counts at most 2 bytes (vLLM serves a
    float32 checkpoint in 16 bits)."""
    text_config = config.get("text_config")
    cfg: dict[str, Any] = text_config if isinstance(text_config, dict) else config
    if any(cfg.get(key) for key in _OTHER_ATTENTION) or "hf_overrides" in engine.extra:
        return None
    if any(kind != "full_attention" for kind in cfg.get("layer_types") or []):
        return None
    if cfg.get("sliding_window") and cfg.get("use_sliding_window", True):
        return None
    try:
        layers = int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
        kv_heads = int(cfg.get("num_key_value_heads") or heads)
        head_dim = int(cfg.get("head_dim") or int(cfg["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    kv_dtype = engine.extra.get("kv_cache_dtype") or engine.kv_cache_dtype
    dtype = engine.extra.get("dtype") or engine.dtype
    if kv_dtype and kv_dtype != "auto":
        size = _DTYPE_BYTES.get(str(kv_dtype))
    elif dtype and dtype != "auto":
        size = _DTYPE_BYTES.get(str(dtype))
    else:
        size = min(_DTYPE_BYTES.get(str(cfg.get("torch_dtype") or cfg.get("dtype") or ""), 2), 2)
    if size is None or layers < 1 or head_dim < 1:
        return None
    stage_layers = math.ceil(layers / par.pipeline_parallel_size)
    rank_heads = max(1, kv_heads // par.tensor_parallel_size)
    per_token = 2 * stage_layers * rank_heads * head_dim * size
    split = f" per rank at TP {par.tensor_parallel_size} x PP {par.pipeline_parallel_size}" if par.gpus > 1 else ""
    shape = (f"{stage_layers} layers x {rank_heads} KV heads x {head_dim} dims x {size} bytes x 2 (keys and values) "
             f"= {per_token:,} bytes per token{split}")
    return per_token, shape


def _ray_knows_accelerator(name: str) -> bool:
    try:
        from ray.util import accelerators
    except ImportError:  # pragma: no cover - ray is a core dependency
        return False
    return name in {v for k, v in vars(accelerators.accelerators).items() if k.isupper() and isinstance(v, str)}


def parse_serving(data: dict[str, Any] | None) -> ServingSpec:
    """`model.serving` -> ServingSpec, or a ServingError naming the offending key."""
    from pydantic import ValidationError

    try:
        return ServingSpec.model_validate(data or {})
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            if not loc and ": " in msg:
                loc, _, msg = msg.partition(": ")
            lines.append(f"model.serving.{loc}: {msg}" if loc else f"model.serving: {msg}")
        raise ServingError("\n".join(lines)) from None
