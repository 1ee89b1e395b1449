"""Shared fixtures: one local Ray instance per test session (2 cores, no dashboard).

Under pytest-xdist (`make test` runs two workers; `PYTEST_WORKERS=0`: one process) each worker
is a session of its own: it gets a Ray temp dir of its own (RAY_TMPDIR, inherited by every
`masgrid` subprocess it starts), so neither worker's `ray.init` nor `masgrid run` finds or joins the other's
cluster. Test files that start the real engine or a Ray head share a group (`xdist_group`
below), so one worker runs them all: one engine per test run, not one per worker.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
# Ray's log monitor globs its session's log folder on every pass (ten a second) while the folder
# holds under this many files; the suite's sessions start hundreds of actors, each leaving log
# files. At 0 it globs every 0.5 s (Ray's LOG_NAME_UPDATE_INTERVAL_S); every line still reaches
# the driver, a new file is read from its start. After 150 actors, idle: 1.43 -> 0.79 CPU-s a
# minute (docs/performance.md). Inherited by every Ray head the suite starts.
os.environ.setdefault("RAY_LOG_MONITOR_MANY_FILES_THRESHOLD", "0")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # short: Ray's socket paths live under it (AF_UNIX paths are limited to 107 bytes)
    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix=f"ray-{os.environ['PYTEST_XDIST_WORKER']}-", dir="/tmp")

#: the real engine (vLLM's CPU build): files that use its session fixture, and the files that
#: start engines or Serve LLM deployments of their own; all run on one worker
ENGINE_FIXTURES = {"vllm_engine"}
ENGINE_FILES = {"test_engine_lost.py", "test_engine_memory.py", "test_serve_llm_real.py",
                "test_cluster_in_miniature.py", "test_serve_two_replicas.py"}
#: files that start Ray heads (`masgrid up`, several nodes on loopback) or swap Serve apps
#: through model phases. On 2 cores two of these at once (on two workers) ran each at half
#: speed and failed on timing: they share the engine's group.
CLUSTER_FILES = {"test_cluster.py", "test_multinode.py", "test_phased_sweeps.py"}


def xdist_group(path: Path) -> str | None:
    """The group a test file runs in under xdist: every test of a group goes to one worker."""
    if (path.name in ENGINE_FILES | CLUSTER_FILES
            or any(f in path.read_text(errors="replace") for f in ENGINE_FIXTURES)):
        return "engine"
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """loadgroup, grouped by file here. xdist marks a group by a suffix of the test id, which
    pytest 9.2 no longer lets a plugin change: its `xdist_group` marks are silently ignored, and
    both workers started engines at once. Every other file is a unit of its own (as in
    `--dist loadfile`: a module's fixtures are set up on one worker, not on both), and the
    engine group, the longest unit, goes out first."""
    from xdist.scheduler import LoadGroupScheduling

    groups: dict[str, str | None] = {}

    class FileGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            if file not in groups:
                path = Path(config.rootpath) / file
                groups[file] = xdist_group(path) if path.is_file() else None
            return groups[file] or file

        def _assign_work_unit(self, node: Any) -> None:
            if "engine" in self.workqueue:
                self.workqueue.move_to_end("engine", last=False)
            super()._assign_work_unit(node)

    return FileGroups(config, log)


@pytest.fixture(scope="session")
def ray_session():
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, namespace="masgrid", log_to_driver=False,
                 configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module", autouse=True)
def _release_session_actors():
    """After each test file, the warm actors its sweeps left in this worker's Ray session
    (idle drivers, the host pool and its hosts, idle recorders) are stopped: idle, each took
    about 0.7 % of a core for the rest of the session (80 processes, about 380 CPU-s, in one
    run of the suite)."""
    yield
    import sys

    ray_runs = sys.modules.get("masgrid._private.platform.sweeps.ray_runs")
    if ray_runs is not None:
        ray_runs.release_session_actors()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """The tiny random chat model (masgrid model tiny), built once per session."""
    from masgrid._private.actors.serving.tiny_model import build_tiny_model

    path = tmp_path_factory.mktemp("tiny-model")
    build_tiny_model(path)
    return path


#: the session's engine while it runs (`vllm_engine`), for the hook that stops it after its last user
_SESSION_ENGINE: list[Any] = []


@pytest.fixture(scope="session")
def vllm_engine(tiny_model, tmp_path_factory):
    """One real vLLM engine (CPU build) serving the tiny model for the session's tests that use
    it, which run first in the engine's group and stop it when the last one is done
    (`pytest_runtest_teardown`): idle, it still takes about 1.5 % of a core."""
    from tests.support.engine import engine_missing, start_engine

    missing = engine_missing()
    if missing:
        pytest.skip(missing)
    engine = start_engine(tiny_model, tmp_path_factory.mktemp("vllm"))
    _SESSION_ENGINE.append(engine)
    yield engine
    engine.stop()  # stopped already unless the session ended early


def _uses_engine(item: pytest.Item) -> bool:
    return "vllm_engine" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files that use the session engine first, each whole and in its own order (a stable
    sort: every other file keeps its place). They are all in the engine's group, which runs on
    one worker in this order."""
    users = {item.path for item in items if _uses_engine(item)}
    items.sort(key=lambda item: item.path not in users)


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop the session engine once the last test that uses it is done. Every worker collects
    the whole suite, so `session.items` after this one says whether another user is to come."""
    if not _SESSION_ENGINE or not _uses_engine(item):
        return
    later = item.session.items[item.session.items.index(item) + 1:]
    if not any(_uses_engine(other) for other in later):
        _SESSION_ENGINE.pop().stop()


@pytest.fixture(scope="session")
def cooper_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One CooperBench cache directory for the tests that only need a test environment, shared
    by both xdist workers: building one (a venv, pip) costs about 5 CPU-s, and the synthetic
    pools' trees need the same one. `ensure_env` locks each environment while it builds or
    checks it, so the workers never build one twice. Tests of building, reuse and
    broken environments keep a cache of their own."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "cooper-cache"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture(scope="session")
def serve_port(ray_session):
    """One Serve HTTP proxy for the session, on a free loopback port. Serve keeps the port of
    whoever starts it first, so every test that reaches Serve over HTTP asks for this one."""
    from ray import serve

    from tests.support.engine import free_port

    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    return port


@pytest.fixture
def without_vllm(monkeypatch):
    """This process as a machine without vLLM: `find_spec("vllm")` finds nothing and
    `import vllm` fails, as on a CPU node where only masgrid is installed. The suite's own
    environment has the CPU engine, so the no-vLLM paths are checked this way."""
    import importlib.util
    import sys

    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None):
        if name == "vllm" or name.startswith("vllm."):
            return None
        return real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` raises ImportError
