"""Appendix C statistics and the table/figure builders on hand-made run tables."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from masgrid.families.agentsnet import analysis as an


def _runs(rows: list[tuple[str, int, str, str, bool, float]]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["model", "agents", "task", "graph", "success", "soft_score"])
    df["status"] = "ok"
    df["condition"] = "base"
    df["tokens_in"], df["tokens_out"] = 100 * df["agents"], 10 * df["agents"]
    df["tokens_total"] = df["tokens_in"] + df["tokens_out"]
    return an.agentsnet_runs(df)


def test_cell_se_matches_the_papers_numbers() -> None:
    # 6 of 9 solved -> 0.67 +- 0.17 and 8 of 9 -> 0.89 +- 0.11 (Table 9 rows).
    rows = [("m", 4, "agentsnet/coloring", g, i < 6, 1.0) for g in ("x",) for i in range(9)]
    rows += [("m", 4, "agentsnet/matching", "x", i < 8, 1.0) for i in range(9)]
    cells = an.cell_stats(_runs(rows))
    col = cells.set_index("problem")
    assert col.loc["coloring", "mean"] == pytest.approx(6 / 9) and col.loc["coloring", "se"] == pytest.approx(1 / 6)
    assert col.loc["matching", "se"] == pytest.approx(1 / 9)
    assert an.table_by_size(_runs(rows)).loc["Coloring", 4] == "0.67 ± 0.17 [n=9]"


def test_error_propagation_over_cells() -> None:
    rows = []
    for graph, wins in (("ws", [1, 1, 0]), ("ba", [1, 0, 0]), ("dt", [1, 1, 1])):
        rows += [("m", 8, "agentsnet/consensus", graph, bool(w), 0.5) for w in wins]
    runs = _runs(rows)
    cells = an.cell_stats(runs)
    ses = [math.sqrt(sum((x - sum(w) / 3) ** 2 for x in w) / 2) / math.sqrt(3)
           for w in ([1, 1, 0], [1, 0, 0], [1, 1, 1])]
    total = an.agentsnet_score(runs).iloc[0]
    assert total["mean"] == pytest.approx((2 / 3 + 1 / 3 + 1) / 3)
    assert total["se"] == pytest.approx(math.sqrt(sum(s * s for s in ses)) / 3)
    assert len(cells) == 3 and cells["n"].tolist() == [3, 3, 3]


def test_tables_and_figures(tmp_path: Path) -> None:
    rows = [(m, n, f"agentsnet/{t}", g, (s + n) % 2 == 0, 0.8)
            for m in ("a", "b") for n in (4, 8) for t in an.TASKS for g in ("ws", "ba", "dt") for s in range(2)]
    runs = _runs(rows)
    table2 = an.table_solved(runs)
    assert list(table2.index) == ["a", "b"] and "AgentsNet" in table2.columns and "Vertex Cover" in table2.columns
    assert table2.loc["a", "AgentsNet"] == "0.50 (0.09) [n=60]"  # all five tasks: the paper's score, unflagged
    assert an.table_solved(runs, "soft_score", with_total=False).loc["a", "Coloring"] == "0.80 (0.00) [n=12]"
    tokens = an.table_tokens(runs)
    assert tokens.loc["a", (8, "tokens_total")] == 880
    assert an.table_prompt_variants(runs).loc["base", "Average"].startswith("0.50")
    for png in (an.figure_task_contributions(runs, tmp_path / "f4.png"), an.figure_scaling(runs, tmp_path / "f5.png")):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tables_both_ways_over_the_reference_flag() -> None:
    # vertex cover, one cell: solved, flagged (nobody said Yes: 0), solved, unsolved, recorded before the flag
    rows = [("m", 8, "agentsnet/vertex_cover", "ws", ok, 0.5) for ok in (True, False, True, False, True)]
    df = pd.DataFrame(rows, columns=["model", "agents", "task", "graph", "success", "soft_score"])
    df["status"], df["condition"] = "ok", "base"
    df["reference_unscorable"] = [False, True, False, False, None]
    df["reference_unscorable_reason"] = [None, "no_coordinator", None, None, None]
    every, recorded = an.agentsnet_runs(df), an.agentsnet_runs(df, "reference")
    assert an.table_solved(every).loc["m", "Vertex Cover"].startswith(f"{3 / 5:.2f}")
    assert an.table_solved(recorded).loc["m", "Vertex Cover"].startswith(f"{3 / 4:.2f}")
    assert an.run_set_note(every) == ("Run set 'all': 1 runs the released code would not have recorded are counted "
                                      "with masgrid's scores (1 no_coordinator); 1 runs recorded without the flag "
                                      "are treated as recorded.")
    assert an.run_set_note(every, "reference").startswith("Run set 'reference': 1 runs ")
    with pytest.raises(ValueError, match="run_set"):
        an.agentsnet_runs(df, "paper")
    older = df.drop(columns=["reference_unscorable", "reference_unscorable_reason"])
    assert len(an.agentsnet_runs(older, "reference")) == 5


def test_parser_modes_are_never_pooled() -> None:
    rows = [("m", 8, "agentsnet/coloring", "ba", ok, 1.0) for ok in (True, False, False)]
    df = pd.DataFrame(rows, columns=["model", "agents", "task", "graph", "success", "soft_score"])
    df["status"], df["condition"] = "ok", "base"
    df["reply_parser"] = ["strict", "reference", None]  # None: recorded before the column, read strictly
    with pytest.raises(ValueError, match="both parser modes"):
        an.agentsnet_runs(df)
    assert an.agentsnet_runs(df, parser="strict")["success"].tolist() == [1.0, 0.0]
    assert an.agentsnet_runs(df, parser="reference")["success"].tolist() == [0.0]
    assert an.agentsnet_runs(df.iloc[[0, 2]])["reply_parser"].tolist() == ["strict", "strict"]


def test_agentsnet_score_over_fewer_than_five_tasks_is_flagged() -> None:
    """The paper's AgentsNet score averages all five tasks; a partial one says how many it has."""
    rows = [("m", 16, "agentsnet/coloring", "ba", s < 2, 1.0) for s in range(3)]
    rows += [("m", 16, "agentsnet/vertex_cover", "ba", True, 1.0) for _ in range(3)]
    cell = an.table_solved(_runs(rows)).loc["m", "AgentsNet"]
    assert cell.startswith(f"{(2 / 3 + 1) / 2:.2f}") and cell.endswith("[2 of 5 tasks]")


@pytest.mark.parametrize("seed", range(5))
def test_tables_give_n_and_spread_on_random_runs(seed: int) -> None:
    """Every cell's n and table 11's SDs against plain-Python counts and textbook SDs."""
    import random

    rng = random.Random(seed)
    rows = [(rng.choice("ab"), rng.choice((4, 8)), f"agentsnet/{rng.choice(an.TASKS)}", rng.choice(("ws", "ba")),
             rng.random() < 0.5, rng.random()) for _ in range(80)]
    runs = _runs(rows)
    runs["tokens_total"] = [rng.randint(100, 9000) for _ in range(len(runs))]
    tokens = an.table_tokens(runs)
    by_size = an.table_by_size(runs)
    for (model, size), grp in runs.groupby(["model", "agents"]):
        values = grp["tokens_total"].tolist()
        mean = sum(values) / len(values)
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else math.nan
        assert tokens.loc[model, (size, "tokens_total")] == pytest.approx(mean)
        assert tokens.loc[model, (size, "tokens_total sd")] == pytest.approx(sd, nan_ok=True)
        assert tokens.loc[model, (size, "tokens_total n")] == len(values)
    for (task, size), grp in runs.groupby(["problem", "agents"]):
        assert by_size.loc[an.TASK_LABELS.get(task, task), size].endswith(f"[n={len(grp)}]")
    solved = an.table_solved(runs)
    for (model, task), grp in runs.groupby(["model", "problem"]):
        assert solved.loc[model, an.TASK_LABELS.get(task, task)].split(" [")[1] == f"n={len(grp)}]"
    for model, grp in runs.groupby("model"):
        assert f"[n={len(grp)}]" in solved.loc[model, "AgentsNet"]
