"""Profile agentnb's hot path: ``python -m benchmarks.profile [--runs N] [--case hierarchy|single]``.

Runs the overhead benchmark's workload under cProfile and prints the functions that take the
most time of their own. A tool for finding the next thing to make cheaper, not a benchmark:
the profiler itself multiplies the run time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats

from ._cases import Case, agentnb_hierarchy, agentnb_single


async def _repeat(case: Case, runs: int) -> None:
    for _ in range(runs):
        case.reset()
        await case.run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--case", choices=["hierarchy", "single"], default="hierarchy")
    parser.add_argument("--sort", default="tottime", help="pstats sort key (tottime, cumulative)")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    case = agentnb_hierarchy() if args.case == "hierarchy" else agentnb_single()
    asyncio.run(_repeat(case, 50))  # warm up
    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(_repeat(case, args.runs))
    profiler.disable()
    stats = pstats.Stats(profiler).strip_dirs().sort_stats(args.sort)
    print(f"{args.case}: {args.runs} runs, {args.runs * case.calls_per_run} model calls")
    stats.print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
