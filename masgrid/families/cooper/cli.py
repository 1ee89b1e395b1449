"""`masgrid cooper ...`: CooperBench's evaluator and demo data, used on their own.

`masgrid cooper eval` merges and tests patches that came from anywhere (a run, the gold
patches, a hand-written file) so the evaluator can be checked independently of any agent;
`masgrid cooper demo-data DIR` writes the synthetic textkit pool. Bad input ends in one line
on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from masgrid.families.cooper.evaluate import EvalResult, evaluate_patches
from masgrid.families.cooper.layout import CooperDataError, load_task
from masgrid.families.cooper.merge import Resolver
from masgrid.families.cooper.paths import default_cache_dir
from masgrid.families.cooper.resolver import LLMResolver
from masgrid.families.cooper.sandbox import Sandbox, SandboxError, SandboxSettings, sandbox_problem
from masgrid.families.cooper.synthetic import write_synthetic_pool
from masgrid.families.cooper.testenv import TestEnvError

USAGE = """usage:
  masgrid cooper eval --data-dir D --repos-dir R --task POOL/ID --features i,j [--gold] [--patch i=FILE ...]
                      [--solo FILE] [--sandbox bwrap|none] [--cache-dir C] [--timeout S] [--out FILE]
                      [--resolver-model NAME --resolver-base-url URL [--resolver-api-key-env ENV]
                       [--resolver-timeout S] [--resolver-retries N] [--resolver-max-tokens N]]
  masgrid cooper demo-data DIR      write the synthetic textkit pool (DIR/data, DIR/repos)
  masgrid cooper judge RESULTS_DIR [--model PRESET] [--base-url URL] [--served-name NAME] [--set key=value]
                      LLM judge of coop conversations for communication errors (appendix J)
  masgrid cooper sweep SUBSET [--settings coop,solo,nocomm] [--dry-run] cooper.data_dir=D [key=value ...]
                      every grid point of D/subsets/SUBSET.json (lite, flash_10, team3_clean, ...) as one sweep"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, status 2, no usage dump
        raise CooperDataError(message)


def _eval_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="masgrid cooper eval", add_help=False)
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--repos-dir", type=Path, required=True)
    p.add_argument("--task", required=True, help="POOL/ID, e.g. pallets_jinja_task/1559")
    p.add_argument("--features", required=True, help="comma-separated feature ids, e.g. 1,2")
    p.add_argument("--patch", action="append", default=[], help="i=FILE: agent i's patch")
    p.add_argument("--gold", action="store_true", help="use the gold patch for every feature without --patch")
    p.add_argument("--solo", type=Path, help="one patch implementing all the features (Solo setting)")
    p.add_argument("--sandbox", choices=("bwrap", "none"), default="bwrap")
    p.add_argument("--cache-dir", type=Path, default=None)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per feature's test run")
    p.add_argument("--out", type=Path, default=None)
    # the llm stage (appendix C): a model behind an OpenAI-compatible endpoint, at temperature 0
    p.add_argument("--resolver-model", default=None, help="model id the resolver's requests name")
    p.add_argument("--resolver-base-url", default=None, help="its endpoint, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--resolver-api-key-env", default="OPENAI_API_KEY")
    p.add_argument("--resolver-timeout", type=float, default=120.0, help="seconds per attempt")
    p.add_argument("--resolver-retries", type=int, default=2)
    p.add_argument("--resolver-max-tokens", type=int, default=None)
    return p


def _evaluate_with_resolver(a: argparse.Namespace, evaluate: Callable[[Resolver], EvalResult]) -> dict[str, Any]:
    """`evaluate(resolver)` with the LLM resolver on the model the --resolver-* options name;
    the result as JSON-ready data with a `resolver` block (model, calls, tokens, each call)."""
    from masgrid.sdk.models import (
        BackendSettings,
        ClientCache,
        get_counter,
        http_backend,
        run_with_ask,
        scoring_settings,
    )
    from masgrid.sdk.tasks import ScoringModel

    if not (a.resolver_model and a.resolver_base_url):
        raise CooperDataError("the resolver needs both --resolver-model and --resolver-base-url")
    request = ScoringModel(actor="resolver", config_key="resolver", temperature=0.0, settings={
        "name": a.resolver_model, "base_url": a.resolver_base_url, "api_key_env": a.resolver_api_key_env,
        "timeout_s": a.resolver_timeout, "max_retries": a.resolver_retries, "max_tokens": a.resolver_max_tokens})
    try:
        _, settings = scoring_settings(request, "openai", BackendSettings())
    except ValueError as exc:
        raise CooperDataError(str(exc)) from None
    calls: list[dict[str, Any]] = []

    def on_call(prompt: str, c: Any) -> None:
        calls.append({"reply": c.text, "ok": c.error is None, "error": c.error, "tokens_in": c.tokens_in,
                      "tokens_out": c.tokens_out, "usage_source": c.usage_source,
                      "latency_s": round(c.latency_s, 3), "attempts": c.attempts})

    async def main() -> tuple[EvalResult, dict[str, Any]]:
        clients = ClientCache()
        try:
            return await run_with_ask(lambda ask: evaluate(LLMResolver(ask)), "resolver", settings,
                                      http_backend(settings, get_counter(), clients), on_call)
        finally:
            await clients.aclose()

    result, totals = asyncio.run(main())
    return {**result.model_dump(mode="json"), "resolver": {**totals, "temperature": 0.0, "calls_made": calls}}


def _read_patch(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CooperDataError(f"cannot read patch {path}: {exc}") from None


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CooperDataError(f"{what} must be comma-separated integers, got {text!r}") from None


def _eval(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:
        print(USAGE.split("\n  masgrid cooper demo-data")[0])
        print("\n--cache-dir: test environments and scratch checkouts; default: the one runs use "
              "($MASGRID_COOPER_CACHE, else $XDG_CACHE_HOME/masgrid/cooper, else ~/.cache/masgrid/cooper)")
        return 0
    a = _eval_parser().parse_args(argv)
    pool, _, tid = a.task.partition("/")
    if not pool or not tid.isdigit():
        raise CooperDataError(f"--task must be POOL/ID (e.g. pallets_jinja_task/1559), got {a.task!r}")
    task = load_task(a.data_dir, pool, int(tid))
    features = _ints(a.features, "--features")
    patches: dict[int, str] = {}
    for item in a.patch:
        key, _, path = item.partition("=")
        if not key.isdigit() or not path:
            raise CooperDataError(f"--patch takes i=FILE, got {item!r}")
        patches[int(key)] = _read_patch(Path(path))
    if a.solo is not None:
        if patches or a.gold:
            raise CooperDataError("--solo excludes --patch and --gold")
        patches = {features[0]: _read_patch(a.solo)}
    else:
        for fid in features:
            if fid not in patches and a.gold and fid in task.features:
                patches[fid] = task.features[fid].patch
        missing = [f for f in features if f not in patches]
        if missing:
            raise CooperDataError(f"no patch for feature(s) {missing}: give --patch i=FILE or --gold")
        if set(patches) - set(features):
            raise CooperDataError(f"--patch names features outside --features {features}")
    if a.sandbox == "bwrap" and (problem := sandbox_problem()) is not None:
        raise CooperDataError(problem)
    cache = a.cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    sandbox = Sandbox(SandboxSettings(kind=a.sandbox, timeout_s=a.timeout), writable=[])

    def evaluate(resolver: Resolver | None) -> EvalResult:
        return evaluate_patches(task, patches, a.repos_dir, sandbox=sandbox, cache_dir=cache.resolve(),
                                features=features, timeout_s=a.timeout, resolver=resolver)

    if a.resolver_model or a.resolver_base_url:
        text = json.dumps(_evaluate_with_resolver(a, evaluate), indent=2)
    else:
        text = evaluate(None).model_dump_json(indent=2)
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


def _demo(argv: list[str]) -> int:
    if argv in (["-h"], ["--help"]):
        print("usage: masgrid cooper demo-data DIR      write the synthetic textkit pool (DIR/data, DIR/repos)")
        return 0
    if len(argv) != 1:
        raise CooperDataError("demo-data takes one directory")
    pool = write_synthetic_pool(Path(argv[0]))
    print(json.dumps(json.loads(pool.model_dump_json()), indent=2))
    return 0


def _judge(argv: list[str]) -> int:
    from masgrid.families.cooper.judge import judge_command

    return judge_command(argv)


def _sweep(argv: list[str]) -> int:
    from masgrid.families.cooper.sweep import sweep_command

    return sweep_command(argv)


def cooper_command(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    commands = {"eval": _eval, "demo-data": _demo, "judge": _judge, "sweep": _sweep}
    if argv[0] not in commands:
        print(f"masgrid cooper: unknown command {argv[0]!r}\n{USAGE}", file=sys.stderr)
        return 2
    try:
        return commands[argv[0]](argv[1:])
    except (CooperDataError, TestEnvError, SandboxError) as exc:
        print(f"masgrid cooper {argv[0]}: {exc}", file=sys.stderr)
        return 2
