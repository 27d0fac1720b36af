"""This worker process's share of PGARENA_POOL_SIZE.

pgarena passes PGARENA_POOL_SIZES ("4,3,3": POOL_SIZE // WORKERS each, the remainder to the first
workers, so the shares add up to PGARENA_POOL_SIZE). The server forks its workers without telling them
an index, so each worker claims the first free slot by locking a file named after the port and its
parent (the server's master process); the lock lives as long as the worker, so a worker that replaces a
dead one takes the slot (and the share) it left.
"""

import fcntl
import os
import tempfile

_held = []  # the slot's open lock file, kept for the life of the process


def pool_share() -> int:
    """Connections this process's pool may hold (PGARENA_POOL_SIZE_PER_WORKER if no list is given)."""
    sizes = [int(s) for s in os.environ.get("PGARENA_POOL_SIZES", "").split(",") if s]
    fallback = int(os.environ["PGARENA_POOL_SIZE_PER_WORKER"])
    if len(sizes) <= 1:
        return sizes[0] if sizes else fallback
    stem = f"pgarena-pool-{os.environ.get('PGARENA_PORT', '0')}-{os.getppid()}"
    for index, size in enumerate(sizes):
        handle = open(os.path.join(tempfile.gettempdir(), f"{stem}-{index}.lock"), "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _held.append(handle)
        return size
    return fallback
