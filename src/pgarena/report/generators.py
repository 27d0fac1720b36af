"""The report's "Generators" section: for every cell whose windows were driven by several k6 processes
(Repetition.generators), each generator's own figures and the merged ones, window by window. One table
per cell, the same rows in Markdown and HTML."""

from __future__ import annotations

from pgarena.results.models import Cell, HeadroomPlace, Repetition, RunResults

COLUMNS = ["Window", "Generator", "Host", "Segment", "Requests", "Failures", "2xx/s", "p50", "p99", "CPU s",
           "CPU share", "Clock offset", "Start skew"]

MERGED = "merged"
INTRO = ("Each window of these cells was driven by several k6 processes, each running one execution segment of "
         "the load (k6 splits the VUs or the arrival rate itself), started paused and resumed together. The "
         "**merged** row is what the cell's figures use: requests and failures summed, latency percentiles "
         "computed from the union of every generator's raw samples (never averaged). **CPU share**: the "
         "generator's CPU over the window as a share of the CPUs it was pinned to (generators on the same CPUs "
         "share them: the merged row gives their sum). **Start skew**: from the first resume sent to the last one "
         "answered, an upper bound of how far apart the generators started. A clock offset of 0 on the same "
         "host is by construction (one kernel clock); *not measured* otherwise.")


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f}ms" if value < 100 else f"{value:,.0f}ms"


def _cpu(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.2f}"


def _share(cpu: float | None, seconds: float, cpus: list[int] | None) -> str:
    if cpu is None or not cpus or not seconds:
        return "not measured" if cpu is None else "–"
    return f"{cpu / (seconds * len(cpus)):.0%} of {len(cpus)} CPU{'s' if len(cpus) != 1 else ''}"


def _rows(rep: Repetition) -> list[list[str]]:
    record = rep.generators
    assert record is not None
    rows = []
    for place in record.places:
        offset = ("not measured" if place.clock_offset_seconds is None else
                  f"{place.clock_offset_seconds:g} s ({place.clock_offset_method or '?'})")
        rows.append([str(rep.index), place.name, place.host, place.segment, f"{place.requests:,}",
                     f"{place.failures:,}", f"{place.rps:,.0f}", _ms(place.latency_p50_ms),
                     _ms(place.latency_p99_ms), _cpu(place.cpu_seconds),
                     _share(place.cpu_seconds, place.duration_seconds, place.cpus), offset, ""])
    cpus = sorted({c for place in record.places for c in (place.cpus or [])})
    skew = "not measured" if record.start_skew_seconds is None else f"{record.start_skew_seconds * 1000:.1f} ms"
    rows.append([str(rep.index), MERGED, "", "", f"{rep.requests:,}", f"{rep.errors.total:,}",
                 f"{rep.rps:,.0f}", _ms(rep.latency.p50_ms), _ms(rep.latency.p99_ms),
                 _cpu(rep.generator_cpu_seconds), _share(rep.generator_cpu_seconds, rep.duration_seconds, cpus),
                 "", skew])
    return rows


def cell_title(cell: Cell) -> str:
    parameter = f" {cell.parameter_name}={cell.parameter}" if cell.parameter is not None else ""
    return f"{cell.stack} — {cell.workload}{parameter} @ {cell.level_label}"


def groups(results: RunResults) -> list[dict]:
    """[{title, rows}] for every cell with several generators in at least one window."""
    out = []
    for cell in results.cells:
        reps = [r for r in cell.repetitions if r.generators is not None]
        if reps:
            out.append({"title": cell_title(cell), "rows": [row for rep in reps for row in _rows(rep)]})
    return out


def ingest_note(results: RunResults) -> str:
    """One paragraph on where an ingested run's load came from ('' for a measured run)."""
    record = results.ingested
    if record is None:
        return ""
    return (f"Ingested from {len(record.outputs)} k6 output(s) ({record.source}); segments "
            f"{', '.join(record.segments)}. Not measured: {', '.join(record.not_measured)}.")


def payload(results: RunResults) -> dict:
    """The HTML report's data for this section."""
    return {"intro": INTRO.replace("**", "").replace("*", ""), "columns": COLUMNS, "groups": groups(results), "ingest": ingest_note(results)}


def section(results: RunResults) -> str:
    """The Markdown section ('' when no cell had several generators)."""
    from pgarena.report.markup import table

    found = groups(results)
    if not found:
        return ""
    parts = [INTRO, *([ingest_note(results)] if results.ingested else [])]
    for group in found:
        rows = [[f"**{c}**" if c == MERGED else c for c in row] for row in group["rows"]]
        parts += [f"**{group['title']}**", table(COLUMNS, rows, "llllrrrrrrrll")]
    return "\n\n".join(parts)


def headroom_scope(results: RunResults) -> str | None:
    """What the generator headroom was measured for, where the run had several generator places (or one
    elsewhere): each place's part, its CPU or "not measured" (another machine); for results from before
    per-place headroom, that it was one local generator's. None for a run with one local generator."""
    h = results.generator_headroom
    if h is None:
        return None
    if not h.places:
        counts = {len(r.generators.places) for c in results.cells for r in c.repetitions if r.generators}
        if not counts:
            return None
        return (f"measured for one local generator only (results from before per-place headroom), while the cells "
                f"were driven by {max(counts)} generator places together: it is not their headroom")

    def place(p: HeadroomPlace) -> str:
        where = p.host + ("" if not p.cpus else f", CPU{'s' if len(p.cpus) != 1 else ''} "
                          f"{','.join(map(str, p.cpus))}")
        cpu = "CPU not measured (another machine)" if p.cpu_fraction is None else f"its CPUs {p.cpu_fraction:.0%} busy"
        return f"{p.name} ({where}): {p.rps:,.0f} req/s, {cpu}"

    text = (f"measured with the run's {len(h.places)} generator places together, as they drive every cell: "
            + "; ".join(place(p) for p in h.places))
    if h.cpu_not_measured:
        text += (f". Whether {', '.join(h.cpu_not_measured)} limited the window is not measured"
                 + ("" if h.generator_cpu_fraction is not None else
                    ", so no cell is judged against this headroom (only against its own generator CPU, where read)"))
    return text
