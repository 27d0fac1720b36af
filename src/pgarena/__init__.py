"""pgarena: benchmark HTTP API stacks on PostgreSQL with verified answers and repeatable numbers."""

__version__ = "0.1.0"
