"""Progress of a run: which stack, cell and repetition, the last RPS and an ETA.

Two faces over one state: on a terminal a live status line (rich) stays under the scrolling log; off a
terminal (CI logs, pipes) nothing is redrawn and each cell's log line carries "cell 3/21, ETA 12 min".
The ETA is the mean time of the finished cells times the cells left (builds and verification included in
that mean, so it settles after the first stack).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.live import Live
from rich.text import Text


def format_duration(seconds: float) -> str:
    """'45 s', '12 min', '1 h 05 min'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


class RunProgress:
    """Counts cells and computes the ETA; `live` redraws a status line on a terminal."""

    def __init__(self, *, console: Console | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._console = console
        self._live: Live | None = None
        self.total = 0
        self.done = 0
        self._skipped = 0
        self._started = clock()
        self.stack = ""
        self.cell = ""
        self.repetition = 0
        self.last_rps: float | None = None
        self.unit = "cell"
        self.deadline: float | None = None
        """A run with a time budget: the clock() time it is spent (the ETA is then the budget's)."""

    # --- the state ------------------------------------------------------------------------------------
    def begin(self, total_cells: int, already_done: int = 0, unit: str = "cell") -> None:
        """Cells planned for the run (those finished before a resume count as done, not in the ETA); an
        interleaved run counts windows instead (`unit="window"`)."""
        self.total, self.done, self._skipped, self.unit = total_cells, already_done, already_done, unit
        self._started = self._clock()
        if self._console is not None and self._console.is_terminal:
            self._live = Live(self._status(), console=self._console, refresh_per_second=4, transient=True)
            self._live.start()

    def eta_seconds(self) -> float | None:
        """Seconds left: the budget's when the run has one (its rounds stop when it is spent), else from the
        mean time of the cells finished in this process (None before the first)."""
        if self.deadline is not None:
            return max(0.0, self.deadline - self._clock())
        measured = self.done - self._skipped
        if measured <= 0:
            return None
        return (self._clock() - self._started) / measured * max(self.total - self.done, 0)

    def position(self) -> str:
        """'cell 3/21, ETA 12 min' for a log line."""
        eta = self.eta_seconds()
        return f"{self.unit} {min(self.done + 1, self.total)}/{self.total}" + ("" if eta is None else f", ETA {format_duration(eta)}")

    def cell_started(self, stack: str, label: str) -> None:
        self.stack, self.cell, self.repetition, self.last_rps = stack, label, 0, None
        self._refresh()

    def repetition_done(self, index: int, rps: float) -> None:
        self.repetition, self.last_rps = index, rps
        self._refresh()

    def cell_done(self) -> None:
        self.done += 1
        self._refresh()

    def skip(self, cells: int) -> None:
        """Planned cells that will not run (their stack failed): done, but not part of the ETA's mean."""
        self.done += cells
        self._skipped += cells
        self._refresh()

    def end(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    # --- the terminal face ------------------------------------------------------------------------------
    def _status(self) -> Text:
        eta = self.eta_seconds()
        parts = [f"{self.done}/{self.total} {self.unit}s", self.stack, self.cell]
        if self.repetition:
            parts.append(f"rep {self.repetition}")
        if self.last_rps is not None:
            parts.append(f"last {self.last_rps:,.0f} req/s")
        parts.append("ETA " + (format_duration(eta) if eta is not None else "…"))
        return Text(" · ".join(p for p in parts if p), style="bold cyan")

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._status())
