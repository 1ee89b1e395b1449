"""Shared fixtures: one local Ray instance per test session (2 cores, no dashboard)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("RAY_AUTH_MODE", "disabled")


@pytest.fixture(scope="session")
def ray_session():
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, namespace="masgrid", log_to_driver=False,
                 configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """The tiny random chat model (masgrid model tiny), built once per session."""
    from masgrid._private.actors.serving.tiny_model import build_tiny_model

    path = tmp_path_factory.mktemp("tiny-model")
    build_tiny_model(path)
    return path


@pytest.fixture(scope="session")
def vllm_engine(tiny_model, tmp_path_factory):
    """One real vLLM engine (CPU build) serving the tiny model for the whole session."""
    from tests.support.engine import engine_missing, start_engine

    missing = engine_missing()
    if missing:
        pytest.skip(missing)
    engine = start_engine(tiny_model, tmp_path_factory.mktemp("vllm"))
    yield engine
    engine.stop()
