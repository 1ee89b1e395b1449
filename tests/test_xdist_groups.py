"""The suite's two workers: every test file that starts the real engine, a Serve LLM app or a
Ray head runs in one group (one worker, one at a time), as tests/conftest.py says."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests.conftest import CLUSTER_FILES, ENGINE_FILES, xdist_group

TESTS = Path(__file__).resolve().parent


def test_the_scheduler_groups_by_file(pytestconfig, monkeypatch):
    """The scheduler tests/conftest.py gives xdist: every test of an engine file, whatever its id,
    lands in the one "engine" scope, which is handed out first; another file is a scope of its own."""
    from tests.conftest import pytest_xdist_make_scheduler

    monkeypatch.setattr(pytestconfig.option, "tx", ["2*popen"], raising=False)  # what `-n 2` sets
    scheduler = pytest_xdist_make_scheduler(pytestconfig, None)
    engine = "tests/actors/serving/test_real_engine_families.py"  # uses the session engine
    assert (TESTS.parent / engine).is_file()
    scopes = {scheduler._split_scope(f"{engine}::test_agentsnet"),
              scheduler._split_scope(f"{engine}::test_masbench_protocols[kv]"),
              scheduler._split_scope("tests/platform/cluster/test_cluster.py::test_up_and_down"),
              scheduler._split_scope("tests/platform/sweeps/model_phases/test_cluster_in_miniature.py::test_x@other")}
    assert scopes == {"engine"}
    plain = "tests/platform/run/test_config.py::test_run_id_is_identity_not_placement"
    assert scheduler._split_scope(plain) == "tests/platform/run/test_config.py"
    assert xdist_group(TESTS / "platform/run/test_config.py") is None

    # the engine group goes to the first worker that asks, ahead of files with more tests
    class Node:
        def __init__(self, name: str) -> None:
            self.name, self.sent, self.shutting_down = name, [], False
            self.gateway = SimpleNamespace(id=name)

        def send_runtest_some(self, indices: list[int]) -> None:
            self.sent.extend(indices)

        def shutdown(self) -> None:
            self.shutting_down = True

    first, second = Node("gw0"), Node("gw1")
    collection = [f"{plain}[{i}]" for i in range(50)] + [f"{engine}::test_agentsnet", f"{engine}::test_other"]
    for node in (first, second):
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    ids = [collection[i] for i in first.sent]
    assert ids[:2] == [f"{engine}::test_agentsnet", f"{engine}::test_other"], ids[:3]
    assert not any(engine in collection[i] for i in second.sent)


def test_the_named_files_exist():
    """A renamed file would silently leave the group and start its engine beside another."""
    names = {path.name for path in TESTS.rglob("test_*.py")}
    assert ENGINE_FILES | CLUSTER_FILES <= names, sorted((ENGINE_FILES | CLUSTER_FILES) - names)
