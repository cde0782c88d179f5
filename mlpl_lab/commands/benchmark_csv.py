"""The benchmark's tables as CSV next to notebook 07's HTML (``07_benchmark_<table>.csv``),
written by ``report`` and ``benchmark`` once notebook 07 has run, read back from the runs it
stored -- never trained here."""
from __future__ import annotations

from pathlib import Path

from .errors import CommandError

BENCHMARK_NOTEBOOK = "07_benchmark"


def write_benchmark_csv(out: Path, profile: str, parameters=None) -> list:
    """The benchmark's tables as CSV next to its HTML: the chapter's grid under the parameters
    the notebook was given, read back from the run store (the notebook just stored every run)."""
    from ..chapters import benchmark
    from ..protocol.asked import ensure_asked
    from ..runs.ensure import read_only

    p = {k: v for k, v in dict(parameters or {}).items() if k in benchmark.PARAMETERS and v is not None}
    with read_only("the CSV tables are read from the runs notebook 07 stored"):
        d = benchmark.design(profile, **p)
        runs = benchmark.results(d, ensure_asked(benchmark.specs, d, label="07 benchmark"))
    return benchmark.write_csv(benchmark.tables(runs.results), out)


def after_benchmark(path: Path, out: Path, profile: str, parameters, numerics_before) -> None:
    """Once notebook 07 (``path``) has run: its tables as CSV, unless a numerics version
    changed while it ran (``numerics_before``: the versions its kernel imported) -- its runs and
    the CSV would then come from different code."""
    from ..core.numerics import VERSIONS, versions_on_disk

    numerics_after = versions_on_disk()
    if not numerics_before == numerics_after == VERSIONS:
        changed = sorted(c for c in set(VERSIONS) | set(numerics_before) | set(numerics_after)
                         if len({VERSIONS.get(c), numerics_before.get(c), numerics_after.get(c)}) > 1)
        raise CommandError(
            f"the numerics versions changed while {path.name} ran ("
            + "; ".join(f"{c}: {VERSIONS.get(c)} at the start, {numerics_before.get(c)} -> "
                        f"{numerics_after.get(c)} in the notebook" for c in changed)
            + "): its runs and the CSV tables would come from different code, so no CSV was written. "
            "Run the command again (stored runs of the current versions are reused).")
    csvs = write_benchmark_csv(out, profile, parameters)
    print(f"[mlpl-lab]   {len(csvs)} benchmark tables as CSV: "
          f"{out}/{BENCHMARK_NOTEBOOK}_*.csv", flush=True)
