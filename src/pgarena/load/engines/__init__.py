"""Load generators behind one interface: `get_engine("oha" | "k6")`."""

from pgarena.load.engines.base import Engine, EngineUnavailable, LoadOutcome, LoadSpec
from pgarena.load.engines.k6 import K6Engine
from pgarena.load.engines.oha import OhaEngine

ENGINES: dict[str, type[Engine]] = {"oha": OhaEngine, "k6": K6Engine}


def get_engine(name: str) -> Engine:
    """The engine called `name`; EngineUnavailable if its binary cannot be found."""
    if name not in ENGINES:
        raise EngineUnavailable(f"unknown engine '{name}'; known: {', '.join(ENGINES)}")
    return ENGINES[name]()


__all__ = ["ENGINES", "Engine", "EngineUnavailable", "LoadOutcome", "LoadSpec", "get_engine"]
