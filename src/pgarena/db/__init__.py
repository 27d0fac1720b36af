"""The database: the managed cluster or the user's server, pgarena's own schema and data, expected answers,
statement accounting, observed connections, the pgbench ceiling and the level start line."""
