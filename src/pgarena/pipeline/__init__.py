"""The run, end to end: plan the cells, bring the stacks up, run the schedule (sequential or interleaved),
measure the run-wide baselines, write results and reports, resume."""
