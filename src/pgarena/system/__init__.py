"""The machine: processes and their trees, cgroups, CPU and memory meters, the envelope a stack ran in,
the environment record, and the reaper that leaves no orphans."""
