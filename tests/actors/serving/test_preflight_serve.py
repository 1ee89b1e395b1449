"""Preflight of backend=serve without base_url: deploy (or find) the app, then check it."""

from __future__ import annotations

import pytest

from masgrid._private.platform.sweeps.preflight import PreflightError, preflight
from tests.actors.serving.conftest import compose_run

pytestmark = pytest.mark.slow


def test_standin_app_is_deployed_and_checked_by_route(tmp_path, serve_port: int) -> None:
    from ray import serve

    base = ["backend=serve", "model=standin", f"model.serving.http_port={serve_port}", f"results_dir={tmp_path}"]
    preflight([compose_run([*base, "model.serving.route=handle"])])  # deploys it; RUNNING is the check
    assert str(serve.status().applications["masgrid-standin"].status).endswith("RUNNING")
    preflight([compose_run([*base, "model.serving.route=http"])])  # its models list over Serve's route
    # an app behind a base_url is someone else's: checked over HTTP like backend=openai
    wrong = compose_run([*base, "model.serving.route=http",
                         f"+model.base_url=http://127.0.0.1:{serve_port}/no-such-prefix/v1"])
    with pytest.raises(PreflightError, match=r"GET /models: HTTP 404"):
        preflight([wrong])
