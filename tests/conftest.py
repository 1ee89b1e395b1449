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
