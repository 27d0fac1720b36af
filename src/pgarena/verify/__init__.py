"""Verification: every answer judged against PostgreSQL's own (before load, and sampled under it), the
bad-input battery, transaction invariants and per-window accounting."""
