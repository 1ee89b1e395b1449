"""`masgrid cooper eval` on the gold patches of the synthetic pool, and its one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from masgrid.families.cooper.sandbox import sandbox_problem
from masgrid._private.platform.commands.cli import main
from tests.support.chat_server import ChatServer, words
from tests.support.resolver_server import BROKEN, correct


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    assert main(["cooper", "demo-data", str(root / "pool")]) == 0
    return root


def _args(root, *extra):
    return ["cooper", "eval", "--data-dir", str(root / "pool" / "data"), "--repos-dir", str(root / "pool" / "repos"),
            "--task", "textkit_task/1", "--cache-dir", str(root / "cache"), *extra]


@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
def test_eval_gold_pair_prints_and_writes_the_result(demo, capsys):
    capsys.readouterr()
    out = demo / "result.json"
    assert main(_args(demo, "--features", "4,5", "--gold", "--out", str(out))) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text())
    assert printed["merge_stage"] == "union" and printed["conflicts"] == {"naive": 1, "union": 0}
    assert printed["feature_pass"] == {"4": True, "5": True} and printed["success"] is True


@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
def test_eval_with_patch_files(demo, capsys):
    """Feature 3's gold patch handed in as feature 1's agent patch: feature 1's tests fail."""
    patch = demo / "pool" / "data" / "textkit_task" / "task1" / "feature3" / "feature.patch"
    capsys.readouterr()
    assert main(_args(demo, "--features", "1,3", "--patch", f"1={patch}", "--gold", "--sandbox", "none")) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["sandbox"] == "none" and printed["feature_pass"] == {"1": False, "3": True}


@pytest.mark.parametrize("extra, message", [
    (["--features", "1,2"], "no patch for feature(s) [1, 2]"),
    (["--features", "1,x", "--gold"], "--features must be comma-separated integers"),
    (["--features", "1,2", "--patch", "1=/nonexistent.patch", "--gold"], "cannot read patch /nonexistent.patch"),
    (["--features", "1,2", "--bogus"], "unrecognized arguments: --bogus"),
    (["--features", "1,2", "--gold", "--resolver-model", "m"], "needs both --resolver-model and --resolver-base-url"),
    (["--features", "1,2", "--gold", "--resolver-model", "m", "--resolver-base-url", "http://127.0.0.1:9/v1",
      "--resolver-timeout", "0"], "resolver.timeout_s: Input should be greater than 0"),
])
def test_bad_input_is_one_line_with_status_2(demo, capsys, extra, message):
    capsys.readouterr()
    assert main(_args(demo, *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bad_task_and_missing_clone(demo, capsys):
    capsys.readouterr()
    assert main(_args(demo, "--features", "1,2", "--gold", "--task", "textkit_task")) == 2  # the last --task wins
    assert "--task must be POOL/ID" in capsys.readouterr().err
    args = _args(demo, "--features", "1,2", "--gold")
    args[args.index("--repos-dir") + 1] = str(demo / "elsewhere")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "fetch github:masgrid/textkit" in err and err.count("\n") == 1
    assert main(["cooper", "demo-data", str(demo / "pool")]) == 2  # never overwrites a pool
    assert "already exists" in capsys.readouterr().err


@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
def test_eval_with_a_resolver_model(demo, capsys):
    """Gold pair 1,2 (union breaks feature 1): a correct resolver over HTTP fixes it, one that
    answers HTTP 500 leaves the llm stage failed with the union result standing."""
    with ChatServer(correct) as server:
        capsys.readouterr()
        assert main(_args(demo, "--features", "1,2", "--gold", "--resolver-model", "merge-resolver",
                          "--resolver-base-url", server.base_url)) == 0
        (request,) = server.requests
    printed = json.loads(capsys.readouterr().out)
    assert (printed["merge_stage"], printed["success"], printed["resolver_outcome"]) == ("llm", True, "resolved")
    resolver = printed["resolver"]
    assert request["temperature"] == 0 and request["model"] == "merge-resolver"
    assert (resolver["resolver_calls"], resolver["resolver_errors"]) == (1, 0)
    assert resolver["resolver_tokens_in"] == words(request["messages"][0]["content"])
    assert resolver["calls_made"][0]["ok"] and resolver["temperature"] == 0.0

    with ChatServer(BROKEN["http_500"][0]) as server:
        assert main(_args(demo, "--features", "1,2", "--gold", "--resolver-model", "m", "--resolver-retries", "0",
                          "--resolver-base-url", server.base_url)) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["merge_stage"], printed["success"], printed["resolver_outcome"]) == ("union", False, "failed")
    assert "http_5xx" in printed["resolver_failure"] and printed["resolver"]["resolver_errors"] == 1


@pytest.mark.parametrize("command", ["eval", "demo-data", "judge", "sweep"])
def test_help_exits_0(command, capsys):
    for flag in ("--help", "-h"):
        try:
            code = main(["cooper", command, flag])
        except SystemExit as done:  # argparse's own help (judge) exits; the command line's status is the same
            code = done.code
        assert code == 0
        assert "usage" in capsys.readouterr().out.lower()


def test_eval_and_runs_share_one_default_cache_dir(monkeypatch, tmp_path):
    """`masgrid cooper eval` without --cache-dir and runs without cooper.cache_dir use the same place."""
    from masgrid.families.cooper.options import CooperOptions
    from masgrid.families.cooper.paths import default_cache_dir, resolve_paths
    from masgrid.families.cooper import cli as cooper_cli

    for env in ({"XDG_CACHE_HOME": str(tmp_path / "xdg")}, {"MASGRID_COOPER_CACHE": str(tmp_path / "own")}, {}):
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        monkeypatch.delenv("MASGRID_COOPER_CACHE", raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        assert cooper_cli.default_cache_dir is default_cache_dir
        expected = {"XDG_CACHE_HOME": tmp_path / "xdg" / "masgrid" / "cooper",
                    "MASGRID_COOPER_CACHE": tmp_path / "own"}.get(next(iter(env), ""),
                                                                  (Path.home() / ".cache" / "masgrid" / "cooper"))
        assert default_cache_dir() == expected.resolve()
        if env:  # (the demo pool is written under it)
            assert resolve_paths(CooperOptions()).cache_dir == expected.resolve()
