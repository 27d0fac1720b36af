"""Run progress: counts, ETA from finished cells, resume and skipped stacks (pgarena.pipeline.progress)."""

from __future__ import annotations

import io

from rich.console import Console

from pgarena.pipeline.progress import RunProgress, format_duration


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_eta_is_the_mean_cell_time_times_the_cells_left():
    clock = Clock()
    p = RunProgress(clock=clock)
    p.begin(10)
    assert p.eta_seconds() is None and p.position() == "cell 1/10"
    for _ in range(2):
        p.cell_started("s", "c")
        clock.now += 30
        p.cell_done()
    assert p.eta_seconds() == 8 * 30
    assert p.position() == "cell 3/10, ETA 4 min"


def test_resumed_and_skipped_cells_count_as_done_but_not_in_the_mean():
    clock = Clock()
    p = RunProgress(clock=clock)
    p.begin(10, already_done=4)
    assert p.position() == "cell 5/10" and p.eta_seconds() is None
    clock.now += 60
    p.cell_done()
    p.skip(3)  # a stack whose build failed
    assert p.done == 8 and p.eta_seconds() == 2 * 60


def test_a_terminal_gets_a_live_status_line_and_a_pipe_does_not():
    piped = RunProgress(console=Console(file=io.StringIO(), force_terminal=False))
    piped.begin(3)
    assert piped._live is None
    piped.end()
    tty = RunProgress(console=Console(file=io.StringIO(), force_terminal=True))
    tty.begin(3)
    tty.cell_started("go-nethttp-pgx", "perf-test rows1 @ 50 VUs")
    tty.repetition_done(2, 12345.6)
    status = tty._status().plain
    assert "go-nethttp-pgx" in status and "rep 2" in status and "12,346 req/s" in status and "0/3 cells" in status
    tty.end()
    assert tty._live is None


def test_format_duration():
    assert [format_duration(s) for s in (45, 720, 3900)] == ["45 s", "12 min", "1 h 05 min"]
