"""A stack as a process: what it is started with (launch.py), its cold start, its lines of code."""
