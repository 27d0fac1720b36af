"""What the user asks for: the run configuration and profiles (run.py) and each stack.toml (stackdef.py)."""
