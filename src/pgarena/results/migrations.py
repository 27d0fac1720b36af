"""Older results documents lifted to the current schema on load (pyperf and asv do the same).

`MIGRATIONS[n]` turns a version-n document (plain JSON) into version n+1; `store.load` applies them in
order. Documents are never rewritten on disk.
"""

from __future__ import annotations

from pgarena.results.models import Spread
from pgarena.stats.intervals import confidence_interval, relative_half_width


def _answered_per_second(repetition: dict) -> float:
    """2xx answers per second of a stored repetition (its status codes over its duration)."""
    answered = sum(n for code, n in (repetition.get("status_codes") or {}).items() if str(code).startswith("2"))
    duration = repetition.get("duration_seconds") or 0
    return answered / duration if duration else 0.0


def update_to_3(document: dict) -> dict:
    """Schema 2 → 3: `rps` meant every completed request per second; it now means 2xx answers per second.
    The old figure moves to `requests_per_second_all` (per repetition and per cell summary), `rps` is
    recomputed from the stored status codes; the cell's interval and spread follow from the new values.
    Everything added in 3 has a default (no rounds: the run was sequential)."""
    for cell in document.get("cells", []):
        reps = cell.get("repetitions", [])
        for rep in reps:
            rep["requests_per_second_all"] = rep.get("rps")
            rep["rps"] = _answered_per_second(rep)
        summary = cell.get("summary")
        if summary and reps:
            summary["requests_per_second_all"] = summary.get("rps")
            summary["rps"] = Spread.of([r["rps"] for r in reps]).model_dump()
            if summary.get("rps_interval") and len(reps) >= 2:
                values = [r["rps"] for r in reps]
                low, high = confidence_interval(values, summary["rps_interval"]["level"])
                summary["rps_interval"].update(mean=(low + high) / 2, low=low, high=high,
                                               rel_half_width=relative_half_width(values, summary["rps_interval"]["level"]))
    document["schema_version"] = 3
    return document


CONFIG_SECONDS = ("warmup_s", "warmup_cap_s", "duration_s", "cell_budget_s", "ceiling_s", "http_timeout_s",
                  "rewarm_s")
"""Settings stored as `<name>_s` up to schema 3; the document's unit suffix is `_seconds` everywhere."""


def update_to_4(document: dict) -> dict:
    """Schema 3 → 4: the stored configuration's durations end in `_seconds` like every other figure
    of the document (`duration_s` → `duration_seconds`, ...). Nothing else changed."""
    config = document.get("config") or {}
    for name in CONFIG_SECONDS:
        if name in config:
            config[name.removesuffix("_s") + "_seconds"] = config.pop(name)
    document["schema_version"] = 4
    return document


MIGRATIONS = {2: update_to_3, 3: update_to_4}
"""schema_version → the function that lifts a document of that version by one."""
