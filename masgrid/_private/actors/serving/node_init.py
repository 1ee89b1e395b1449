"""Serve LLM's node initialisation, skipped where it has nothing to do.

Before it starts the engine, a Serve LLM replica runs one Ray task on every node of its
placement group to fetch the model files (`initialize_node` in ray.llm). For a model in a
local directory and no cloud mirror that task returns the path it was given, but it is a
fresh worker process (the replica's runtime_env) importing torch and transformers: the
tiny model was served in 37.4 s with it and 30.0 s without, 55.6 against 44.7 CPU-s, on an
idle 2-core machine (benchmarks/bench_serve_node_init.py). This callback tells the replica
to skip it when the model is a local directory and every bundle of the replica's placement
group is on the replica's own node; it then does the one other thing that step does
(create torch's hub `kernels` directory). Anywhere else, the default step runs unchanged.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from ray.llm._internal.common.callbacks.base import CallbackBase

log = logging.getLogger(__name__)


def skippable(model_source: Any, bundle_nodes: set[str], here: str) -> bool:
    """Whether node initialisation has nothing to do: a local model directory (present
    here) and every bundle on this node."""
    return isinstance(model_source, str) and os.path.isdir(model_source) and bundle_nodes == {here}


class LocalModelInit(CallbackBase):
    """Skips the per-node download task where `skippable` says it has nothing to do."""

    async def on_before_node_init(self) -> None:
        import ray

        loading = self.llm_config.model_loading_config
        source = loading.get("model_source") if isinstance(loading, dict) else loading.model_source
        if self.ctx.placement_group is None:
            return
        table = ray.util.placement_group_table(self.ctx.placement_group)
        nodes = set(table.get("bundles_to_node_id", {}).values())
        if not skippable(source, nodes, ray.get_runtime_context().get_node_id()):
            return
        import torch

        os.makedirs(os.path.join(torch.hub._get_torch_home(), "kernels"), exist_ok=True)
        self.ctx.run_init_node = False
        log.info("model %s is a local directory on this node: no per-node download task", source)
