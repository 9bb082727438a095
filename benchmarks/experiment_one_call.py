"""An experiment of one-call runs against the same runs through `sweep` (issue 34, item 5).

Run: ``PYTHONPATH=. python -m benchmarks.experiment_one_call [runs] [rounds]`` (default 1,000
runs, 7 rounds). Each run is one agent answering at once on a zero-latency scripted model, so
what the store adds per run (the writer thread, its commits, the row's preparation) is as
large a share of the run as it can be. The two paths alternate within each round (sweep, then
experiment, then the other way round) so the machine's drift falls on both; the ratio is
taken per round and the median reported with its spread (the machine is shared).
Target: the experiment at most 1.25x the sweep.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import agentnb as nb


async def one(shape: str, trial: int = 0) -> nb.RunResult:
    agent = nb.Agent("solo", "Answer.", nb.FunctionModel(lambda r: nb.say("ok"), name="s"))
    return await nb.run(agent, "Say ok.")


async def swept(runs: int) -> float:
    start = time.perf_counter()
    frame = await nb.sweep(one, {"shape": "solo"}, repeat=runs, progress=False)
    elapsed = time.perf_counter() - start
    assert len(frame) == runs and frame["ok"].all()
    return elapsed


async def stored(runs: int, path: Path) -> float:
    start = time.perf_counter()
    await nb.experiment("bench", one, {"shape": "solo"}, trials=runs, store=path, progress=False)
    return time.perf_counter() - start


async def main(runs: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        await swept(50)  # warm up both paths (imports, tokenizer)
        await stored(50, Path(folder) / "warm.db")
        ratios, sweeps, experiments = [], [], []
        for n in range(rounds):
            path = Path(folder) / f"bench{n}.db"
            if n % 2:
                e, s = await stored(runs, path), await swept(runs)
            else:
                s, e = await swept(runs), await stored(runs, path)
            sweeps.append(s)
            experiments.append(e)
            ratios.append(e / s)
    ratios.sort()
    s, e = statistics.median(sweeps), statistics.median(experiments)
    print(f"runs: {runs:,} (one model call each), rounds: {rounds}")
    print(f"sweep in memory:      {s:.3f} s  ({1000 * s / runs:.3f} ms/run)")
    print(f"experiment to SQLite: {e:.3f} s  ({1000 * e / runs:.3f} ms/run)")
    print(
        f"ratio experiment/sweep: median {statistics.median(ratios):.2f}x, "
        f"range {ratios[0]:.2f}-{ratios[-1]:.2f}x  (target <= 1.25x)"
    )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    asyncio.run(main(*(args + [1000, 7][len(args) :])))
