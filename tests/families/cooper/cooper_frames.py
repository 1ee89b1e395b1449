"""Random CooperBench `runs` frames for the analysis tests: the columns the cooper task writes,
with failed runs, unscored runs and missing (model, setting) cells mixed in."""

from __future__ import annotations

import numpy as np
import pandas as pd

STAGES = ("naive", "union", "llm", "failed")


def random_runs(rng: np.random.Generator, models: int = 3, tasks: int = 12, repeats: int = 2,
                drop: float = 0.15, unscored: float = 0.05, failed: float = 0.05,
                settings: tuple[str, ...] = ("solo", "coop", "nocomm"), sizes: tuple[int, ...] = (2,)) -> pd.DataFrame:
    """One row per (model, task, setting, seed) unless dropped at random; `sizes` features per task."""
    rows = []
    for m in range(models):
        skill = rng.uniform(0.1, 0.9)
        for size in sizes:
            for t in range(tasks):
                features = ",".join(str(t + i) for i in range(size))
                pool = f"pool{t % 3}_task"
                for setting in settings:
                    for seed in range(repeats):
                        if rng.random() < drop:
                            continue
                        coop = setting != "solo"
                        success: object = bool(rng.random() < skill * (0.6 if coop else 1.0))
                        if rng.random() < unscored:
                            success = None
                        rows.append({
                            "run_id": f"m{m}-s{size}-t{t}-{setting}-{seed}", "task": f"cooper/{pool}/{t}",
                            "model": f"model{m}", "seed": seed,
                            "status": "failed" if rng.random() < failed else "ok",
                            "cooper_pool": pool, "cooper_task_id": t, "cooper_features": features,
                            "cooper_setting": setting, "cooper_sandbox": "bwrap",
                            "merge_stage": str(rng.choice(STAGES)) if coop else "single",
                            "conflicts_naive": (None if rng.random() < 0.05 else int(rng.integers(0, 3)))
                            if coop else None,
                            "success": success, "features_passed": int(rng.integers(0, size + 1)),
                            "features_total": size})
    return pd.DataFrame(rows)


def scored(runs: pd.DataFrame) -> pd.DataFrame:
    """What every table should count: ok runs with a success value (computed without masgrid)."""
    return runs[(runs["status"] == "ok") & runs["success"].notna()]
