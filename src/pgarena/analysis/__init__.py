"""Reading results: ranks, paired verdicts, rank agreement, run comparison, shared open-model rates.
No database driver, no HTTP client: it works on stored JSON only."""
