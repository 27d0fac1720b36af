"""Measure the measurer: one k6 (pgarena's single path), one k6 writing raw samples (what each generator of a
distributed window does) and two k6 processes (--generators 2), against pgarena's trivial Go endpoint (the
headroom server) at 50 VUs, 5 s windows, three rounds in alternation. Prints 2xx/s, p99 and generator CPU.

    PYTHONPATH=src .venv/bin/python scripts/measure_generators.py [work folder]
"""

from __future__ import annotations

import sys
from pathlib import Path

from pgarena.config.profiles import build_config
from pgarena.load.distributed import GeneratorPlace, free_port, local_places, run_distributed_window
from pgarena.load.engines import LoadSpec, get_engine
from pgarena.load.headroom import trivial_server_binary
from pgarena.load.window import run_window
from pgarena.system.process import ServerProcess, wait_until_healthy

WINDOW_S = 5.0
ROUNDS = 3


def main() -> None:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else "results/measure-generators")
    raw = work / "raw" / "trivial"
    raw.mkdir(parents=True, exist_ok=True)
    config = build_config(profile="quick", project_dir=work, overrides={"engine": "k6", "generators": 2})
    port = free_port()
    env = {"PGARENA_PORT": str(port), "GOMAXPROCS": str(len(config.server_cpus)), "PATH": "/usr/bin:/bin"}
    engine = get_engine("k6")
    spec = LoadSpec(url=f"http://127.0.0.1:{port}/", method="GET", connections=50, duration_s=0, timeout_s=10)
    with ServerProcess(str(trivial_server_binary()), cwd=work, env=env, log_path=work / "server.log",
                       cpus=config.server_cpus) as server:
        wait_until_healthy(server, spec.url, 30)
        run_window(engine, spec, 2.0, raw, "warmup", config)
        for round_index in range(ROUNDS):
            for mode in ("one k6", "one k6 + CSV", "two k6"):
                stem = f"{mode.replace(' ', '').replace('+', '')}-{round_index}"
                if mode == "one k6":
                    window = run_window(engine, spec, WINDOW_S, raw, stem, config)
                elif mode == "one k6 + CSV":
                    window = run_distributed_window(engine, spec, WINDOW_S, raw, stem, config, [GeneratorPlace("gen1")])
                else:
                    window = run_window(engine, spec, WINDOW_S, raw, stem, config, local_places(2))
                out, cpu = window.outcome, window.generator_cpu_seconds or 0.0
                line = (f"{round_index} {mode:13s} {out.rps:9,.0f} 2xx/s  p99 {out.latency.p99_ms:6.2f} ms  generator "
                        f"CPU {cpu:5.2f} s ({cpu / out.duration_seconds:.0%} of CPUs {config.generator_cpus}, "
                        f"{cpu / out.requests * 1e6:.0f} µs/request)")
                if window.generators is not None and len(window.generators.places) > 1:
                    line += f"  start skew {window.generators.start_skew_seconds * 1000:.1f} ms; " + ", ".join(
                        f"{p.name} {p.rps:,.0f}/s CPU {p.cpu_seconds:.2f} s" for p in window.generators.places)
                print(line, flush=True)


if __name__ == "__main__":
    main()
