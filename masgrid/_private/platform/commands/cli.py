"""`masgrid` command line: run (Hydra), instance, score, report, view, show, serve, up/down, cache, and
the subcommands each installed family adds (Family.cli, e.g. `masgrid judge`, `masgrid cooper`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from masgrid._private.resources import conf_dir


def main(argv: list[str] | None = None) -> int:
    # Local Ray needs no token auth (the Makefile sets the same); a user's own setting wins.
    # Before anything imports Ray, so `masgrid run` prints no token-auth warning.
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    from masgrid._private.platform.commands.console_log import configure_cli_logging

    configure_cli_logging()  # library code logs; the command shows it (console_log.py)
    from masgrid.family import FamilyError

    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except FamilyError as exc:  # a broken or clashing family plugin: whichever command met it first
        print(f"masgrid: {exc}", file=sys.stderr)
        return 2


def _main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    command, rest = argv[0], argv[1:]
    if command == "run":
        return _run(rest)
    if command == "instance":
        return _instance(rest)
    if command == "score":
        return _score(rest)
    if command == "report":
        return _report(rest)
    if command == "show":
        from masgrid._private.platform.commands.show import show_command

        return show_command(rest)
    if command in ("up", "down"):
        from masgrid._private.platform.cluster.head import cluster_command

        return cluster_command(command, rest)
    if command == "view":
        from masgrid._private.site.serve import view_command

        return view_command(rest)
    if command == "serve":
        from masgrid._private.platform.commands.serve_cli import serve_command

        return serve_command(rest)
    if command == "model":
        return _model(rest)
    if command == "families":
        return _families(rest)
    if command == "cache":
        from masgrid._private.platform.commands.cache_cli import cache_command

        return cache_command(rest)
    family_command = _family_commands().get(command)
    if family_command is not None:
        from masgrid.family import resolve

        return int(resolve(family_command.target)(rest))
    print(f"masgrid: unknown command {command!r}\n{usage()}", file=sys.stderr)
    return 2


def _family_commands() -> dict[str, Any]:
    """`masgrid <name>` subcommands the installed families add (Family.cli); core names win."""
    from masgrid.family import families

    return {name: command for family in families().values() for name, command in family.cli.items()
            if name not in CORE_COMMANDS}


#: the commands masgrid itself defines; a family cannot take these names
CORE_COMMANDS = ("run", "instance", "score", "report", "view", "show", "serve", "model", "up", "down", "families",
                 "cache")


USAGE = """usage:
  masgrid run [-m] [key=value ...]        run one configuration (or a Hydra multirun sweep)
  masgrid instance TASK [key=value ...]   print a generated instance as JSON
  masgrid score TASK --instance FILE --answers FILE [--json]
  masgrid report RESULTS_DIR [--out DIR] [--include-invalid] [--condition C] [--no-site]  every table (Markdown, CSV), figure and the HTML site (report/site)
  masgrid report A B [--results DIR] [--out DIR]  two results directories (or experiments) side by side, Welch + Holm
  masgrid view RESULTS_DIR [--port P] [--rebuild]  serve the HTML site on 127.0.0.1 and print its address
  masgrid show RESULTS_DIR RUN_ID [--agent I]  print a run's conversations as the models saw them
  masgrid serve [--dry-run] [model=PRESET ...]  deploy a model on Ray Serve (dry run: print it)
  masgrid model tiny DIR [--seed S]       build the small random chat model that model=tiny_cpu serves (no GPU, seconds)
  masgrid families [--json]               the installed benchmark families: tasks, protocols, options, columns, commands
  masgrid cache list|size|prune [--dir D]  the response cache of model.cache: per model entries and size; prune
                                          --older-than 30d | --max-size 2G | --all [--model M] [--dry-run]
  masgrid up [--port N] [--num-cpus N]    start a local Ray head that later commands join (fast start)
  masgrid down                            stop the head `masgrid up` started
"""
SWEEPS = "  sweeps: masgrid run -m sweep=PRESET model=a,b sweep.max_concurrent=16 (docs/sweeps.md)"


def usage() -> str:
    """The usage text: masgrid's own commands, then each family's (from the registry)."""
    lines = [USAGE.rstrip("\n")]
    lines += [f"  masgrid {name} {command.usage}" for name, command in _family_commands().items()]
    return "\n".join([*lines, "", SWEEPS])


def _model(args: list[str]) -> int:
    from masgrid._private.actors.serving.tiny_model import TinySpec, build_tiny_model

    parser = argparse.ArgumentParser(prog="masgrid model", description="build a model for the CPU engine")
    sub = parser.add_subparsers(dest="what", required=True)
    tiny = sub.add_parser("tiny", help="a small random chat model in Hugging Face layout (docs/serving.md)")
    tiny.add_argument("directory", type=Path)
    tiny.add_argument("--seed", type=int, default=0)
    ns = parser.parse_args(args)
    try:
        summary = build_tiny_model(ns.directory, TinySpec(seed=ns.seed))
    except OSError as exc:
        print(f"masgrid model: {ns.directory}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    return 0


def _families(args: list[str]) -> int:
    """What the registry found (docs/families.md): one row per installed family."""
    from masgrid._private.envs.tasks import task_names
    from masgrid.family import families

    parser = argparse.ArgumentParser(prog="masgrid families", description="the installed benchmark families")
    parser.add_argument("--json", action="store_true", help="one JSON object per family")
    ns = parser.parse_args(args)
    names = task_names()
    rows: list[dict[str, Any]] = []
    for family in families().values():
        tasks = [n for n in names if family.claims(n)]
        rows.append({"name": family.name, "label": family.label, "tasks": tasks,
                     "task_prefixes": list(family.task_prefixes), "default_protocol": family.default_protocol,
                     "protocols": list(family.protocols), "options": family.name if family.options else None,
                     "metrics": list(family.metrics), "commands": list(family.cli),
                     "folder": str(family.folder) if family.folder else None})
    if ns.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(rows)} benchmark families (entry-point group masgrid.families)")
    for column in ("family", "tasks", "default protocol", "option block", "columns", "commands"):
        table.add_column(column)
    for row in rows:
        shown = ", ".join(row["tasks"][:4]) + (f", ... ({len(row['tasks'])})" if len(row["tasks"]) > 4 else "")
        shown = shown or ", ".join(f"{p}..." for p in row["task_prefixes"])
        table.add_row(f"{row['label']} ({row['name']})", shown, str(row["default_protocol"] or "-"),
                      f"{row['options']}:" if row["options"] else "-", str(len(row["metrics"])),
                      ", ".join(row["commands"]) or "-")
    Console().print(table)
    return 0


def split_run_args(args: list[str]) -> tuple[list[str], list[str]]:
    """(Hydra flags with their values, key=value overrides), so `-m` or `--cfg job` may come
    anywhere on the line: Hydra's argparse stops taking flags after the first override."""
    from hydra._internal.utils import get_args_parser

    actions = get_args_parser()._option_string_actions
    flags: list[str] = []
    overrides: list[str] = []
    rest = iter(args)
    for arg in rest:
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        action = actions.get(name)
        if action is None:
            (flags if arg.startswith("-") and "=" not in arg else overrides).append(arg)
            continue
        flags.append(arg)
        if name != arg or action.nargs == 0:  # --flag=value, or a switch
            continue
        value = next(rest, None)
        if value is None:
            continue
        choices = list(action.choices) if action.choices is not None else []
        optional = action.nargs == "?" and (value.startswith("-") or bool(choices) and value not in choices)
        (overrides if optional and not value.startswith("-") else flags).append(value)  # --info x=1: not its value
    return flags, overrides


def _flag_value(flags: list[str], *names: str) -> str | None:
    for i, flag in enumerate(flags):
        key, sep, value = flag.partition("=")
        if key in names:
            return value if sep else (flags[i + 1] if i + 1 < len(flags) else None)
    return None


def _without_flag(flags: list[str], *names: str) -> list[str]:
    out, skip = [], False
    for flag in flags:
        if skip:
            skip = False
        elif flag in names:
            skip = True  # its value follows
        elif flag.partition("=")[0] not in names:
            out.append(flag)
    return out


#: `masgrid run --hydra-help`: Hydra's own text advertises shell completion, which cannot work
#: for a subcommand (and Hydra composes that help without conf/config.yaml, so it is replaced here)
HYDRA_HELP = """Hydra flags of masgrid run (they may come anywhere on the line):
  --cfg,-c job|hydra|all  print the configuration instead of running (with -m: job, every job's)
  --resolve               with --cfg: resolve interpolations
  --package,-p PACKAGE    with --cfg: print this package only
  --info,-i [all|config|defaults|defaults-tree|plugins|searchpath]  Hydra's information
  --multirun,-m           run the grid of every comma list on Ray (docs/sweeps.md)
  --plan                  with -m: print the runs left and the model phases, start nothing (docs/model-phases.md)
  --config-dir,-cd DIR    add a directory of configs to the search path
  --version               Hydra's version
Shell completion (-sc) is not supported."""


def _run(args: list[str]) -> int:
    flags, overrides = split_run_args(args)
    if "--hydra-help" in flags:
        print(HYDRA_HELP)
        return 0
    if {"-sc", "--shell-completion"} & {f.partition("=")[0] for f in flags}:
        print("masgrid run: shell completion is not supported (Hydra's completion script assumes a "
              "one-command program, not `masgrid run`)", file=sys.stderr)
        return 2
    multirun = bool({"-m", "--multirun"} & set(flags))
    plan_only = "--plan" in flags
    if plan_only:
        if not multirun:
            print("masgrid run: --plan shows a sweep's plan; use it with -m", file=sys.stderr)
            return 2
        flags = [f for f in flags if f != "--plan"]
    show = _flag_value(flags, "--cfg", "-c")
    if multirun and show is not None:
        if show != "job":
            print(f"masgrid run: with -m, only --cfg job is supported (every job's configuration), not {show!r}",
                  file=sys.stderr)
            return 2
        flags = _without_flag(flags, "--cfg", "-c", "--resolve")  # the jobs' configs print resolved
    else:
        show = None
    # a sweep's results_dir is checked (and created) by the launcher, once every job is valid
    from masgrid._private.platform.sweeps.compose import hydra_override

    return _hydra_run([*flags, *map(hydra_override, overrides)], multirun, show, plan_only)


def _hydra_run(argv: list[str], multirun: bool, show_config: str | None = None, plan_only: bool = False) -> int:
    import hydra
    from omegaconf import DictConfig, OmegaConf

    from masgrid._private.platform.sweeps.sweep import SweepCall, current_sweep_call

    outcome: dict[str, Any] = {}
    if not multirun:
        data = _compose_once(argv)
        if data is not None:
            _execute_run(data, outcome)
            return _exit_code(outcome)

    @hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")
    def hydra_entry(cfg: DictConfig) -> None:
        _execute_run(OmegaConf.to_container(cfg, resolve=True), outcome)  # type: ignore[arg-type]

    call = SweepCall(show_config=show_config, plan_only=plan_only)
    saved = sys.argv
    sys.argv = ["masgrid run", *argv]
    try:
        with current_sweep_call(call):  # the launcher, called inside, answers here
            hydra_entry()
    finally:
        sys.argv = saved
    if call.result is not None:  # the masgrid_ray launcher ran (multirun mode)
        return call.result.exit_code
    if multirun:  # Hydra's sweeper never called the launcher
        print("masgrid run: the sweep expands to no job; nothing was run", file=sys.stderr)
        return 2
    return _exit_code(outcome)


def _exit_code(outcome: dict[str, Any]) -> int:
    if "error" in outcome:
        return 2
    return 0 if outcome.get("status") in ("ok", "degraded", None) else 1


def _compose_once(argv: list[str]) -> dict[str, Any] | None:
    """A single run's config composed once with Hydra's compose API; `hydra.main` composes
    it twice (once to learn the run mode), about 0.5 s each on a busy 2-core machine. Only
    for plain `key=value` overrides: any flag, any `hydra` override, or any error (which
    Hydra's own path then reports as usual) returns None."""
    if any(arg.startswith("-") or arg.startswith(("hydra.", "hydra/", "+hydra", "~hydra")) for arg in argv):
        return None
    from hydra import initialize_config_dir
    from hydra.types import RunMode

    from masgrid._private.platform.sweeps.compose import compose_job

    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3", job_name="masgrid"):
            data, mode = compose_job(argv)
    except Exception:  # noqa: BLE001 - hydra.main composes again and reports the problem its way
        return None
    return data if mode in (None, RunMode.RUN) else None  # a sweep preset's mode: MULTIRUN


def _execute_run(data: dict[str, Any], outcome: dict[str, Any]) -> None:
    """Validate one composed job config and run it; the outcome (status or error) goes to `outcome`."""
    from masgrid._private.platform.run.config import ConfigError
    from masgrid._private.platform.sweeps.sweep import split_job_config

    try:
        run_cfg, settings = split_job_config(data)
        if settings.adaptive.active:  # a stopping rule needs a grid of cells: refused, not ignored
            raise ConfigError("masgrid run: sweep.adaptive applies to sweeps; add -m (a grid of one cell is fine)")
    except ConfigError as exc:
        outcome["error"] = str(exc)
        print(exc, file=sys.stderr)
        return
    from masgrid._private.actors.serving.spec import ServingError, ServingUnavailable
    from masgrid._private.platform.cluster.engine_alive import EngineLost
    from masgrid._private.platform.sweeps.ray_runs import run_one
    from masgrid._private.platform.sweeps.preflight import PreflightError, preflight
    from masgrid._private.platform.results.storage import ResultsUnwritable
    from masgrid._private.platform.results.results_lock import ResultsDirBusy
    from masgrid._private.platform.run.summary import print_summary

    try:
        preflight([run_cfg])
        summary = run_one(run_cfg)
    except (PreflightError, ServingError, ServingUnavailable, ResultsDirBusy,
            ResultsUnwritable, EngineLost) as exc:  # endpoint (unusable or lost mid-run), results_dir
        outcome["error"] = str(exc)
        print(f"masgrid run: {exc}", file=sys.stderr)
        return
    outcome["status"] = summary.status
    print_summary(run_cfg, summary)


def _instance(args: list[str]) -> int:
    from masgrid._private.platform.commands.task_cli import instance_command

    return instance_command(args)


def _score(args: list[str]) -> int:
    from masgrid._private.platform.commands.task_cli import score_command

    return score_command(args)


def _report(args: list[str]) -> int:
    from masgrid._private.analysis.report import write_report

    parser = argparse.ArgumentParser(prog="masgrid report")
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("other", nargs="?", default=None,
                        help="compare with this: a second results directory, or (with two experiment names) the "
                             "experiment B inside --results")
    parser.add_argument("--results", type=Path, default=Path("results"),
                        help="where experiment names are looked up (default ./results)")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default RESULTS_DIR/report)")
    parser.add_argument("--include-invalid", action="store_true",
                        help="also use runs whose model calls failed above validity.max_model_error_rate")
    parser.add_argument("--condition", default="base",
                        help="the condition Tables 2, 3, 8 and Figure 2 describe (default base)")
    parser.add_argument("--no-site", action="store_true", help="skip the HTML site (OUT/site)")
    ns = parser.parse_args(args)
    if ns.other is not None:
        return _compare(ns.results_dir, ns.other, ns.out, ns.results)
    status = write_report(ns.results_dir, ns.out, with_invalid=ns.include_invalid, condition=ns.condition)
    if status or ns.no_site:
        return status
    from masgrid._private.site.build import build_site

    out = ns.out if ns.out is not None else ns.results_dir / "report"
    index = build_site(ns.results_dir, out / "site")
    print(f"site: {index} (masgrid view {ns.results_dir} serves it on 127.0.0.1)")
    return 0


def _compare(a: Path, b: str, out: Path | None, results: Path) -> int:
    from masgrid._private.analysis.compare import write_comparison

    if out is None:
        out = (a if a.is_dir() else results) / "report" / "compare"
    try:
        files = write_comparison(str(a), b, out, results)
    except ValueError as exc:
        print(f"masgrid report: {exc}", file=sys.stderr)
        return 2
    print(f"comparison: {files[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
