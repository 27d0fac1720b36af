"""Putting load on a stack: the generators (engines/), one window, a cell's repetitions and summary, warm-up,
the schedule of windows and the scheduler of rounds, the SLO search and the generator headroom."""
