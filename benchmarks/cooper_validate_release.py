"""Every gold-patch pair of released CooperBench task sets through masgrid's evaluator, compared
with the released evaluator's outcomes on the same pairs.

    PYTHONPATH=. python benchmarks/cooper_validate_release.py \\
        --release RELEASE --repos-dir REPOS \\
        --task pallets_jinja_task/1559 --task samuelcolvin_dirty_equals_task/43 [--limit N]

Inputs are local: the release repository (a clone or bare mirror; its `dataset/` is
extracted with `git archive`) and the source repositories' clones under --repos-dir (as
`name`, `owner+name/repo`, `owner+name` or `owner/name`). pip runs once per task to build
the test environment (testenv.py); the tests then run offline in the bubblewrap sandbox.

Two references per pair:

* naive conflict - the release ships `dataset/gold_conflict_report.json` with `has_conflict`
  for every gold pair (their own run of the naive merge); compared with our naive stage;
* merge stage and per-feature pass - the release ships no test outcomes, so
  benchmarks/cooper_reference_eval.sh re-does the release evaluator's steps in shell (its
  branch order, its `.gitattributes` union, its diff-then-apply, its output regex) with the
  same cached environment; compared with ours feature by feature.

masgrid merges with the paper's order (first feature's side first in union hunks); the
release merges the other way round. Pairs whose outcome differs are re-evaluated by masgrid
in the release's order (`first_is_ours=False`) to tell order effects from real disagreements.

Writes docs/tasks/cooperbench-eval.md (unless --no-write) and a JSON of every pair.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from masgrid.families.cooper.evaluate import evaluate_patches
from masgrid.families.cooper.gitops import scratch_clone
from masgrid.families.cooper.layout import load_task
from masgrid.families.cooper.repos import require_base
from masgrid.families.cooper.sandbox import Sandbox, SandboxSettings
from masgrid.families.cooper.testenv import ensure_env
from masgrid.families.cooper.testrun import import_root, pytest_args

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "tasks" / "cooperbench-eval.md"
REFERENCE_SH = Path(__file__).resolve().parent / "cooper_reference_eval.sh"


def extract_dataset(release: Path, paths: list[str], dest: Path) -> Path:
    """`dataset/<paths>` of the release's HEAD, unpacked under dest (works on bare mirrors)."""
    blob = subprocess.run(["git", "-C", str(release), "archive", "HEAD", *[f"dataset/{p}" for p in paths]],
                          capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(dest, filter="data")
    return dest / "dataset"


def reference_pair(task, f1: int, f2: int, clone: Path, env_python: Path, srcrel: str, args: list[str],
                   work: Path) -> dict:
    """Run the shell re-implementation of the release evaluator on one gold pair."""
    files = {}
    for name, text in (("p1", task.features[f1].patch), ("p2", task.features[f2].patch),
                       ("t1", task.features[f1].tests_patch), ("t2", task.features[f2].tests_patch)):
        files[name] = work / f"{name}.patch"
        files[name].write_text(text)
    start = time.monotonic()
    done = subprocess.run(["bash", str(REFERENCE_SH), str(clone), task.base_commit, *map(str, files.values()),
                           str(work), str(env_python), srcrel, *args], capture_output=True, text=True)
    line = (done.stdout.strip().splitlines() or ["MERGE=error F1=0 F2=0"])[-1]
    fields = dict(part.split("=", 1) for part in line.split())
    return {"merge": fields.get("MERGE", "error"), "pass": {f1: fields.get("F1") == "1", f2: fields.get("F2") == "1"},
            "wall_s": time.monotonic() - start, "stderr": done.stderr[-300:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--repos-dir", type=Path, required=True)
    ap.add_argument("--task", action="append", required=True, help="POOL/ID")
    ap.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "masgrid" / "cooper")
    ap.add_argument("--limit", type=int, default=None, help="first N pairs per task (smoke runs)")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "cooper_validate_release.json")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--singles", action="store_true",
                    help="only check that each gold feature alone passes its own tests (the environment check)")
    a = ap.parse_args()
    work_root = Path(tempfile.mkdtemp(prefix="cooper-validate-"))
    data_dir = extract_dataset(a.release, [t.split("/")[0] + "/task" + t.split("/")[1] for t in a.task]
                               + ["gold_conflict_report.json"], work_root)
    report = json.loads((data_dir / "gold_conflict_report.json").read_text())
    shipped = {(r["repo"], r["task_id"], r["f1"], r["f2"]): r["has_conflict"] for r in report["all_results"]}
    shipped.update({(r["repo"], r["task_id"], r["f2"], r["f1"]): r["has_conflict"] for r in report["all_results"]})
    sandbox = Sandbox(SandboxSettings(kind="bwrap", timeout_s=600), writable=[])
    a.cache_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    if a.singles:
        singles(a, data_dir, sandbox)
        return
    for spec in a.task:
        pool, tid = spec.split("/")
        task = load_task(data_dir, pool, int(tid))
        clone = require_base(a.repos_dir, task)
        base_tree = scratch_clone(clone, task.base_commit, work_root / f"base-{pool}-{tid}")
        start = time.monotonic()
        env = ensure_env(base_tree, a.cache_dir.resolve())
        print(f"{spec}: env {env.mode} {env.key} built in {time.monotonic() - start:.1f} s (reused={env.reused})",
              flush=True)
        srcrel = str(import_root(base_tree).relative_to(base_tree))
        args = pytest_args(task.test_script)
        pairs = list(itertools.combinations(sorted(task.features), 2))[: a.limit]
        for f1, f2 in pairs:
            ours = evaluate_patches(task, {f1: task.features[f1].patch, f2: task.features[f2].patch}, a.repos_dir,
                                    sandbox=sandbox, cache_dir=a.cache_dir.resolve())
            pair_work = Path(tempfile.mkdtemp(dir=work_root))
            ref = reference_pair(task, f1, f2, clone, env.python, srcrel, args, pair_work)
            ours_merge = {"naive": "clean", "union": "union", "failed": "failed"}.get(ours.merge_stage, ours.merge_stage)
            row = {"task": spec, "pair": f"{f1},{f2}", "ours_naive_conflict": ours.conflicts.get("naive", 0) > 0,
                   "shipped_naive_conflict": shipped.get((pool, int(tid), f1, f2)),
                   "ours_merge": ours_merge, "ref_merge": ref["merge"],
                   "ours_pass": {str(k): v for k, v in ours.feature_pass.items()},
                   "ref_pass": {str(k): v for k, v in ref["pass"].items()},
                   "ours_wall_s": round(ours.wall_s, 2), "ref_wall_s": round(ref["wall_s"], 2), "notes": ours.notes}
            row["agree_conflict"] = row["ours_naive_conflict"] == row["shipped_naive_conflict"]
            row["agree_outcome"] = ours_merge == ref["merge"] and row["ours_pass"] == row["ref_pass"]
            if not row["agree_outcome"]:
                swapped = evaluate_patches(task, {f1: task.features[f1].patch, f2: task.features[f2].patch},
                                           a.repos_dir, sandbox=sandbox, cache_dir=a.cache_dir.resolve(),
                                           first_is_ours=False)
                row["ours_release_order_pass"] = {str(k): v for k, v in swapped.feature_pass.items()}
                row["agree_in_release_order"] = row["ours_release_order_pass"] == row["ref_pass"]
                row["ours_outputs"] = {k: v["output_tail"][-600:] for k, v in ours.feature_tests.items()}
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("task", "pair", "ours_naive_conflict", "shipped_naive_conflict",
                                                  "ours_merge", "ref_merge", "ours_pass", "ref_pass",
                                                  "ours_wall_s", "ref_wall_s")}), flush=True)
        rows_task = [r for r in rows if r["task"] == spec]
        rows_task[0]["env_build_s"] = round(env.built_s, 1)
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(rows, indent=1, default=str))
    table = summary_table(rows)
    print(table)
    if not a.no_write:
        head, _, rest = DOC.read_text().partition("<!-- table -->")
        tail = rest.partition("<!-- /table -->")[2]
        DOC.write_text(f"{head}<!-- table -->\n\n{table}\n\n<!-- /table -->{tail}")


def singles(a: argparse.Namespace, data_dir: Path, sandbox: Sandbox) -> None:
    """Each gold feature on its own (Solo with one feature): does it pass its own tests here?"""
    lines = ["| task set | gold features passing alone | failing |", "|---|---|---|"]
    for spec in a.task:
        pool, tid = spec.split("/")
        task = load_task(data_dir, pool, int(tid))
        passing = []
        for fid in sorted(task.features):
            result = evaluate_patches(task, {fid: task.features[fid].patch}, a.repos_dir, sandbox=sandbox,
                                      cache_dir=a.cache_dir.resolve())
            if result.success:
                passing.append(fid)
        failing = sorted(set(task.features) - set(passing))
        lines.append(f"| {spec} | {len(passing)}/{len(task.features)} | {failing or '-'} |")
    print("\n".join(lines))


def summary_table(rows: list[dict]) -> str:
    """One line per task set: pairs, agreements, wall time (ours and the shell reference)."""
    lines = ["| task set | pairs | naive conflict: ours = shipped report | merge stage + both features' "
             "pass: ours = reference steps | of the rest, equal in the release's merge order | "
             "masgrid s/pair (median) | reference s/pair (median) |",
             "|---|---|---|---|---|---|---|"]
    for spec in dict.fromkeys(r["task"] for r in rows):
        rs = [r for r in rows if r["task"] == spec]
        med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        rest = [r for r in rs if not r["agree_outcome"]]
        lines.append(f"| {spec} | {len(rs)} | {sum(r['agree_conflict'] for r in rs)}/{len(rs)} | "
                     f"{sum(r['agree_outcome'] for r in rs)}/{len(rs)} | "
                     f"{sum(bool(r.get('agree_in_release_order')) for r in rest)}/{len(rest)} | "
                     f"{med([r['ours_wall_s'] for r in rs]):.1f} | {med([r['ref_wall_s'] for r in rs]):.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
