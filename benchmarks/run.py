"""Run agentnb's benchmarks: ``python -m benchmarks [--quick] [--out FILE.json] [--only NAMES]``.

Prints a markdown table and writes every figure, with the machine it was measured on, as JSON
(``benchmarks/results/latest.json`` by default), and the table beside it (``latest.md``).
``--quick`` uses smaller sizes and fewer repetitions and finishes in under a minute; its figures
are for checking that the harness works, so they go to a temporary directory unless ``--out``
says where (the committed results are the full run's). See benchmarks/README.md for how to read them.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python benchmarks/run.py`: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks._stats import machine_info  # noqa: E402
from benchmarks.capture_overhead import bench_capture  # noqa: E402
from benchmarks.cost import bench_cost  # noqa: E402
from benchmarks.fanout import bench_fanout  # noqa: E402
from benchmarks.first_run import bench_first_run  # noqa: E402
from benchmarks.overhead import bench_overhead  # noqa: E402
from benchmarks.report import markdown  # noqa: E402
from benchmarks.stream_latency import bench_stream  # noqa: E402
from benchmarks.sweep_overhead import bench_sweep  # noqa: E402
from benchmarks.token_cache import bench_token_cache  # noqa: E402
from benchmarks.trace_scale import bench_trace_scale  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "latest.json"
"""Where a full run writes: the committed results."""
QUICK_OUT = Path(tempfile.gettempdir()) / "agentnb-benchmarks" / "quick.json"
"""Where ``--quick`` writes unless ``--out`` says otherwise: never over the committed results."""

Bench = Callable[..., dict[str, Any]]

PLAN: dict[str, tuple[Bench, dict[str, Any], dict[str, Any]]] = {
    # name: (function, full-run arguments, quick-run arguments). The fan-out runs before the
    # overhead benchmark imports openai-agents, whose objects would make every GC pass longer.
    "cost": (bench_cost, {}, {}),
    "first_run": (bench_first_run, {"repeats": 3}, {"repeats": 1}),
    "token_cache": (bench_token_cache, {"turns": 500, "repeats": 5}, {"turns": 500, "repeats": 2}),
    "fanout": (
        bench_fanout,
        {"repeats": 5, "reviewer_latency": 1.0, "reviewer_repeats": 3},
        {"repeats": 2, "reviewer_latency": 0.2, "reviewer_repeats": 1},
    ),
    "stream": (bench_stream, {"runs": 400, "block": 5}, {"runs": 40, "block": 5}),
    "sweep": (bench_sweep, {"configs": 100, "repeats": 7}, {"configs": 50, "repeats": 3}),
    "overhead": (bench_overhead, {"runs": 400, "block": 25}, {"runs": 60, "block": 20}),
    "openai_agents_capture": (bench_capture, {"runs": 300, "block": 25}, {"runs": 40, "block": 20}),
    "trace_scale": (
        bench_trace_scale,
        {"workers": 1000, "turns": 100, "repeats": 5, "memory_workers": 100},
        {"workers": 100, "turns": 100, "repeats": 3, "memory_workers": 10},
    ),
}


def run_all(
    names: list[str], *, quick: bool = False, compare: bool = True, echo: bool = True
) -> dict[str, Any]:
    """Run the named benchmarks in order; returns the JSON document (machine + sections)."""
    from agentnb.trace.tokens import tokenizer

    machine = machine_info()
    machine["tokenizer"] = tokenizer()[1]
    started = time.perf_counter()
    sections = []
    for name in names:
        fn, full, small = PLAN[name]
        kwargs = dict(small if quick else full)
        if name == "overhead":
            kwargs["compare"] = compare
        if echo:
            print(f"… {name}", file=sys.stderr, flush=True)
        gc.collect()
        t = time.perf_counter()
        section = fn(**kwargs)
        section["seconds"] = time.perf_counter() - t
        sections.append(section)
    return {
        "machine": machine,
        "quick": quick,
        "duration_s": time.perf_counter() - started,
        "benchmarks": sections,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, under a minute")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"where to write the JSON (default: {DEFAULT_OUT.name} in benchmarks/results/, "
        f"or {QUICK_OUT} with --quick)",
    )
    parser.add_argument(
        "--only", default="", help=f"comma-separated subset of: {', '.join(PLAN)} (default: all)"
    )
    parser.add_argument(
        "--no-openai-agents",
        action="store_true",
        help="skip the side-by-side run on openai-agents even when it is installed",
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(PLAN)
    unknown = [n for n in names if n not in PLAN]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {', '.join(PLAN)}")
    out: Path = args.out or (QUICK_OUT if args.quick else DEFAULT_OUT)
    results = run_all(names, quick=args.quick, compare=not args.no_openai_agents)
    table = markdown(results)
    print(table)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False, default=str) + "\n")
    table_file = out.with_suffix(".md")  # the table as printed, ready for a README
    table_file.write_text(table + "\n")
    print(f"\nwritten: {out} and {table_file.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
