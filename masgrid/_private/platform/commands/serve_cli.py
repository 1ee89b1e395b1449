"""`masgrid serve`: deploy a model preset's Serve app, or show what it would deploy.

The dry run resolves the `model` preset through Hydra exactly as `masgrid run` does and
prints the Serve deployment and the placement of its engine workers, starting nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from masgrid._private.actors.backends.base import BackendSettings
from masgrid._private.resources import conf_dir


def compose_model(overrides: list[str]) -> BackendSettings:
    """The `model` group of the composed config, validated (Hydra overrides as for `run`)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    data = OmegaConf.to_container(cfg.model, resolve=True)
    return BackendSettings.model_validate(data)


def serve_command(args: list[str]) -> int:
    from pydantic import ValidationError

    from masgrid._private.actors.serving.deploy import deploy, describe, http_base_url, serve_llm, target
    from masgrid._private.actors.serving.spec import ServingError, ServingUnavailable, parse_serving

    from masgrid._private.platform.cluster.head import ClusterError, down, running_head, up
    from masgrid._private.platform.cluster.ray_session import ensure_ray

    parser = argparse.ArgumentParser(prog="masgrid serve", description="deploy a model preset on Ray Serve")
    parser.add_argument("--dry-run", action="store_true", help="print the resolved deployment, start nothing")
    parser.add_argument("--check-paths", action="store_true", help="dry run: also require the weights here")
    parser.add_argument("--address", default=None, help="Ray cluster to deploy to (default: RAY_ADDRESS or local)")
    parser.add_argument("--http-host", default="127.0.0.1", help="Serve proxy host (0.0.0.0 on a cluster)")
    parser.add_argument("overrides", nargs="*", help="model=<preset> model.serving.<key>=<value> ...")
    ns = parser.parse_args(args)
    try:
        settings = compose_model(ns.overrides)
        if ns.dry_run:
            print(json.dumps(describe(settings, check_paths=ns.check_paths), indent=2))
            return 0
        if parse_serving(settings.serving).kind == "vllm":  # fail before Ray starts
            serve_llm()
            parse_serving(settings.serving).check_weights()
            parse_serving(settings.serving).check_kv_cache()
        started = False
        if ns.address is None and not os.environ.get("RAY_ADDRESS") and running_head() is None:
            # the app must outlive this command: serve it from a head that `masgrid down` stops
            print(f"masgrid serve: {up()}", file=sys.stderr)
            started = True
        try:
            ensure_ray(ns.address)
            spec = deploy(settings, ns.http_host)
        except BaseException:
            if started:  # leave nothing behind: the head (and any engine it started) goes too
                import ray

                ray.shutdown()
                down()
            raise
    except (ServingError, ServingUnavailable, ValidationError, ClusterError) as exc:
        print(f"masgrid serve: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if type(exc).__module__.startswith(("hydra", "omegaconf")):
            print(f"masgrid serve: {exc}", file=sys.stderr)
            return 2
        raise
    app, dep = target(settings, spec)
    info: dict[str, Any] = {"app": spec.app, "openai_base_url": http_base_url(settings, spec),
                            "handle": f"{app}/{dep}"}
    print(f"masgrid serve: deployed {settings.name} -> {json.dumps(info)}")
    return 0
