"""Experiment store overhead: 10,000 runs of a scripted hierarchy written to SQLite as they end,
against the same runs through `sweep` in memory; then the time to read a summary back.

Run: ``PYTHONPATH=. python -m benchmarks.experiment_store [runs]`` (default 10,000). Each run is
a lead agent that asks two sub-agents (as tools, in parallel) and answers: four model calls on
zero-latency scripted models, so the store's cost is as large a share as it can be. The two
paths alternate (sweep, experiment, sweep, experiment) so drift in the machine's load falls on
both. Target (issue 27): the experiment at most 25 % slower; a summary read in under a second.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import agentnb as nb


def hierarchy(trial: int) -> nb.Agent:
    def lead(request: nb.ModelRequest) -> object:
        if not request.tool_results:
            return [nb.tool_call("legal", input="clause"), nb.tool_call("tax", input="clause")]
        return nb.say(f"verdict {trial}")

    legal = nb.Agent("legal", "Legal.", nb.FunctionModel(lambda r: nb.say("fine"), name="s"))
    tax = nb.Agent("tax", "Tax.", nb.FunctionModel(lambda r: nb.say("ok"), name="s"))
    return nb.Agent(
        "lead", "Lead.", nb.FunctionModel(lead, name="s"), [legal.as_tool(), tax.as_tool()]
    )


async def one(shape: str, trial: int = 0) -> nb.RunResult:
    return await nb.run(hierarchy(trial), "Review the contract.")


async def swept(runs: int) -> float:
    start = time.perf_counter()
    frame = await nb.sweep(one, {"shape": "tree"}, repeat=runs, progress=False)
    elapsed = time.perf_counter() - start
    assert len(frame) == 4 * runs and frame["ok"].all()
    return elapsed


async def stored(runs: int, folder: Path, n: int) -> tuple[float, float, float]:
    path = folder / f"bench{n}.db"
    start = time.perf_counter()
    exp = await nb.experiment(
        "bench", one, {"shape": "tree"}, trials=runs, store=path, progress=False
    )
    elapsed = time.perf_counter() - start
    start = time.perf_counter()
    summary = nb.open_experiment("bench", path).summary("chars_in")
    read = time.perf_counter() - start
    assert summary["n"].item() == runs
    cold = subprocess.run(
        [sys.executable, "-c", COLD, str(path)], capture_output=True, text=True, check=True
    ).stdout.split()
    READS_COLD.append((float(cold[0]), float(cold[1])))
    start = time.perf_counter()
    calls = exp.calls
    frame_s = time.perf_counter() - start
    assert len(calls) == 4 * runs
    return elapsed, read, frame_s


COLD = """
import sys, time
t0 = time.perf_counter()
import agentnb, scipy.stats
t1 = time.perf_counter()
agentnb.open_experiment("bench", sys.argv[1]).summary("chars_in")
print(t1 - t0, time.perf_counter() - t1)
"""
"""A summary read in a new process: the imports (agentnb, pandas, scipy.stats), then the read."""
READS_COLD: list[tuple[float, float]] = []


async def main(runs: int, rounds: int = 2) -> None:
    await swept(50)  # warm up both paths (imports, tokenizer)
    with tempfile.TemporaryDirectory() as folder:
        await stored(50, Path(folder), -1)
        sweeps, experiments, reads, frames = [], [], [], []
        for n in range(rounds):
            sweeps.append(await swept(runs))
            e, r, f = await stored(runs, Path(folder), n)
            experiments.append(e)
            reads.append(r)
            frames.append(f)
    s, e = statistics.median(sweeps), statistics.median(experiments)
    print(f"runs: {runs:,} (4 model calls each), rounds: {rounds}")
    print(f"sweep in memory:      {s:.2f} s  ({1000 * s / runs:.2f} ms/run)  {sweeps}")
    print(f"experiment to SQLite: {e:.2f} s  ({1000 * e / runs:.2f} ms/run)  {experiments}")
    print(f"overhead: {100 * (e / s - 1):+.1f} %  (target <= +25 %)")
    print(
        f"summary read (open_experiment + summary): {statistics.median(reads):.3f} s (target < 1 s)"
    )
    imports = statistics.median(c[0] for c in READS_COLD[1:])
    read = statistics.median(c[1] for c in READS_COLD[1:])
    print(f"summary read in a new process: {read:.3f} s after {imports:.2f} s of imports")
    print(f"calls frame read ({4 * runs:,} rows): {statistics.median(frames):.3f} s")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
