"""The contract every part shares: workload names, routes, request shapes, ranges, value verdicts and flags.
Standard library only; every other layer may import it."""
