"""scripts/speed_meters.py reads a meter over the idle gaps around each window (`<meter>@gaps`)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "speed_meters.py"


def _module():
    spec = importlib.util.spec_from_file_location("speed_meters", SCRIPT)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_each_window_gets_the_meter_over_the_gap_before_and_after_it_and_none_without_units():
    # windows (load start, window start, end): [0.5 s re-warm] 1.0–2.0, 3.0–4.0, 5.0–6.0 (given out of order)
    rows = [{"_span": (4.5, 5.0, 6.0), "probe@gaps": None}, {"_span": (0.5, 1.0, 2.0), "probe@gaps": None},
            {"_span": (2.5, 3.0, 4.0), "probe@gaps": 1.0}]
    # a unit every 0.05 s worth 100 in the first gap (2.01–2.47 s), 400 in the second (4.01–4.47 s), 1 elsewhere
    times = np.arange(0.0, 7.0, 0.05)
    values = np.where((times >= 2.01) & (times <= 2.47), 100.0, np.where((times >= 4.01) & (times <= 4.47), 400.0, 1.0))
    names = _module()._gap_readings(rows, {"combo": np.column_stack([times, values])})
    assert names == ["combo@gaps", "probe@gaps"]  # the run's own gap readings where it took them
    first, middle, last = rows[1], rows[2], rows[0]
    assert first["combo@gaps"] == pytest.approx(math.log(100.0))  # only a gap after it
    assert middle["combo@gaps"] == pytest.approx(math.log(250.0))  # both gaps' units, pooled
    assert last["combo@gaps"] == pytest.approx(math.log(400.0))
    short = [{"_span": (0.5, 1.0, 2.0), "probe@gaps": None}, {"_span": (2.06, 2.5, 3.5), "probe@gaps": None}]
    assert _module()._gap_readings(short, {"combo": np.column_stack([times, values])}) == ["combo@gaps"]
    assert short[0]["combo@gaps"] is None  # 2.01–2.03 s holds no unit: fewer than three is no reading
