"""The history of runs (issue 24): a store of every run's cells, their series, change points and a page."""
