"""Parsers of option values given as text: arrival rates ('90%', '2000'), the run's budget ('1h30m') and round
trips ('0.5ms', '500us'), one level or a list of them. Each raises ValueError with a message for the user.
"""

from __future__ import annotations

import re
from typing import Any


def parse_rate(text: str) -> tuple[float, bool]:
    """An arrival-rate level: ('2000' → (2000.0, False) requests/s; '90%' → (0.9, True) of the closed peak)."""
    raw = str(text).strip()
    relative = raw.endswith("%")
    try:
        value = float(raw[:-1] if relative else raw)
    except ValueError:
        raise ValueError(f"arrival rate '{text}' is neither a number of requests/s nor a percentage") from None
    if not value > 0:
        raise ValueError(f"arrival rate '{text}' must be positive")
    return (value / 100, True) if relative else (value, False)


BUDGET_PATTERN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?\s*")


def parse_budget(text: str) -> float:
    """A run's time budget as seconds: '45m', '1h30m', '90s', '2h' (a unit is required)."""
    match = BUDGET_PATTERN.fullmatch(text)
    if not match or not any(match.groups()):
        raise ValueError(f"a budget is a duration with h, m or s (e.g. 30m, 1h30m), got '{text}'")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


RTT_PATTERN = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|us|µs|s)?\s*")


def parse_rtt(text: str) -> float:
    """A round trip as milliseconds: '2ms', '0.5ms', '500us', '0' (a bare number is milliseconds)."""
    match = RTT_PATTERN.fullmatch(text)
    if not match:
        raise ValueError(f"a round trip is a number with ms, us or s (e.g. 0.5ms, 2ms), got '{text}'")
    value = float(match.group(1))
    return value * {"s": 1000.0, "us": 0.001, "µs": 0.001}.get(match.group(2) or "ms", 1.0)


def parse_stack_rtt(value: Any) -> Any:
    """--stack-rtt as whole milliseconds from 0 to 1000 (text is parsed with parse_rtt)."""
    value = parse_rtt(value) if isinstance(value, str) else value
    if not isinstance(value, int | float) or not 0 <= value <= 1000:
        raise ValueError("a round trip from 0 to 1000 ms")
    if value != int(value):
        raise ValueError("whole milliseconds only (Toxiproxy's latency toxic counts whole ms)")
    return value


def parse_rtt_levels(value: Any) -> Any:
    """--db-rtt's levels as whole milliseconds from 0 to 1000, each once (text is parsed with parse_rtt); a
    value that is not a list is returned as it is, for the field's own type check."""
    if not isinstance(value, list):
        return value
    levels = [parse_rtt(v) if isinstance(v, str) else v for v in value]
    if any(not isinstance(v, int | float) or v < 0 or v > 1000 for v in levels):
        raise ValueError("round trips from 0 to 1000 ms")
    if len(set(levels)) != len(levels):
        raise ValueError("each round trip once")
    if any(v != int(v) for v in levels):
        raise ValueError("whole milliseconds only (Toxiproxy's latency toxic counts whole ms; a "
                         "sub-millisecond delay needs the kernel's netem qdisc, which this kernel lacks)")
    return levels
