"""A run's status from its model-call failures: ok, degraded or invalid.

A run whose calls failed did not measure the model: an unreachable endpoint gives SR 0 at
every grid point, which a table would report as the model's score. So every failed call
is counted, and the run is labelled (docs/results.md, "Run status"):

- `ok`: every model call answered;
- `degraded`: some calls failed, at most `validity.max_model_error_rate` of them; the
  run stays in the tables, and the row says how many failed and why;
- `invalid`: more failed; tables leave it out and say how many they left out;
- `failed` (set elsewhere): the run itself did not complete.
"""

from __future__ import annotations

import json
from collections import Counter

from masgrid.platform.config import ValiditySettings

#: statuses whose metrics the tables use by default
USABLE = ("ok", "degraded")


def judge(model_calls: int, error_classes: Counter[str], settings: ValiditySettings) -> tuple[str, str | None]:
    """(status, error line) for a completed run."""
    errors = sum(error_classes.values())
    if not errors:
        return "ok", None
    rate = errors / model_calls if model_calls else 1.0
    status = "invalid" if rate > settings.max_model_error_rate else "degraded"
    causes = ", ".join(f"{cls} x{n}" for cls, n in error_classes.most_common())
    limit = f"above the {settings.max_model_error_rate:g} limit" if status == "invalid" else "within the limit"
    return status, f"{status}: {errors} of {model_calls} model calls failed ({rate:.1%}, {limit}): {causes}"


def error_classes_json(error_classes: Counter[str]) -> str | None:
    return json.dumps(dict(sorted(error_classes.items()))) if error_classes else None
