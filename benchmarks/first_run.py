"""What a fresh process's first run pays: nothing a run loads on first use may count in its time.

Each figure comes from new Python processes, the default install (``AGENTNB_TOKENIZER``
unset, so bpe-openai or tiktoken counts the tokens), median over ``repeats`` processes:

- a zero-latency scripted agent's first ``run_sync`` minus its second, and the first
  ``result.calls`` of the process (where the tokenizer is loaded now);
- a sweep of three configurations of a 0.1 s scripted agent: the first configuration's
  ``wall_s`` over the median of the other two;
- ``run(timeout=0.5)`` of an agent whose model takes 0.4 s, as the process's first run: it
  should end ``ok`` in 0.4 s, not be held past its timeout by a load;
- ``run_sync(timeout=1.0)`` with a hook whose ``on_model_end`` reads its row's tokens (the
  run loads its tokenizer before its clock starts): the time the caller waits.

The first ``result.calls`` is timed after pandas is imported, so the figure is what agentnb
itself adds to the first read (the tokenizer's load, mostly), against the next run's read.

``root`` is the source tree whose ``agentnb`` is measured (to measure an older version, give a
checkout of it); the script itself uses only the public API.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from ._stats import Row, at_most, row, summarize

ROOT = Path(__file__).resolve().parent.parent

SCRIPTS = {
    "run": """
import time
import agentnb as nb
agent = nb.Agent("w", "Be brief.", nb.ScriptedModel(["Fine."] * 2))
t = time.perf_counter(); first = nb.run_sync(agent, "hello world"); t1 = time.perf_counter() - t
t = time.perf_counter(); second = nb.run_sync(agent, "hello world"); t2 = time.perf_counter() - t
t = time.perf_counter(); import pandas; pandas_s = time.perf_counter() - t
t = time.perf_counter(); calls = first.calls; rows = time.perf_counter() - t
t = time.perf_counter(); calls = second.calls; rows2 = time.perf_counter() - t
out = {"first_s": t1, "second_s": t2, "rows_first_s": rows, "rows_second_s": rows2,
       "pandas_import_s": pandas_s,
       "method": str(calls["tokens_method"].iloc[0])}
""",
    "sweep": """
import asyncio
import agentnb as nb
from agentnb.measure.sweeps import sweep

async def one(i):
    model = nb.ScriptedModel(["Fine."], latency=0.1)
    return await nb.run(nb.Agent("w", "Be brief.", model), f"hello {i}")

frame = asyncio.run(sweep(one, {"i": [0, 1, 2]}, progress=False))
walls = frame.groupby("config")["wall_s"].first().tolist()
out = {"walls": walls}
""",
    "timeout": """
import time
import agentnb as nb
agent = nb.Agent("w", "Be brief.", nb.ScriptedModel(["Fine."], latency=0.4))
t = time.perf_counter(); result = nb.run_sync(agent, "hello", timeout=0.5)
out = {"elapsed_s": time.perf_counter() - t, "ok": result.ok}
""",
    "hook": """
import time
import agentnb as nb

class Costs(nb.Hooks):
    async def on_model_end(self, ctx, agent, response, call):
        self.tokens = call["tokens_in"]

agent = nb.Agent("w", "Be brief.", nb.ScriptedModel(["Fine."]))
hooks = Costs()
t = time.perf_counter(); result = nb.run_sync(agent, "hello", hooks=hooks, timeout=1.0)
out = {"elapsed_s": time.perf_counter() - t, "ok": result.ok, "tokens": hooks.tokens}
""",
}


def fresh(kind: str, root: Path = ROOT) -> dict[str, Any]:
    """One new process running ``SCRIPTS[kind]`` on ``root``'s agentnb; its figures."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTNB_TOKENIZER"}
    env["PYTHONPATH"] = str(root)
    env["PYTHONWARNINGS"] = "ignore"
    code = SCRIPTS[kind] + "\nimport json; print(json.dumps(out))\n"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {kind} process failed: {done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def bench_first_run(repeats: int = 3, root: Path = ROOT) -> dict[str, Any]:
    runs = [fresh("run", root) for _ in range(repeats)]
    sweeps = [fresh("sweep", root) for _ in range(repeats)]
    timeouts = [fresh("timeout", root) for _ in range(repeats)]
    hooked = [fresh("hook", root) for _ in range(repeats)]

    extra_ms = statistics.median((r["first_s"] - r["second_s"]) * 1e3 for r in runs)
    rows_ms = statistics.median(r["rows_first_s"] * 1e3 for r in runs)
    rows2_ms = statistics.median(r["rows_second_s"] * 1e3 for r in runs)
    pandas_ms = statistics.median(r.get("pandas_import_s", 0.0) * 1e3 for r in runs)
    hook_s = statistics.median(h["elapsed_s"] for h in hooked)
    ratios = [s["walls"][0] / statistics.median(s["walls"][1:]) for s in sweeps]
    ratio = statistics.median(ratios)
    elapsed = statistics.median(t["elapsed_s"] for t in timeouts)
    slowest = max(t["elapsed_s"] for t in timeouts)

    rows: list[Row] = []
    target, met = at_most(extra_ms, 50)
    rows.append(
        row(
            "fresh process: first run_sync − second (zero-latency agent)",
            "extra time of the first run",
            extra_ms,
            "ms",
            target=target,
            met=met,
            note=f"tokens counted with {runs[0]['method']}",
        )
    )
    target, met = at_most(rows_ms - rows2_ms, 500)
    rows.append(
        row(
            "fresh process: first result.calls − the next run's (pandas imported before)",
            "extra time of the first read",
            rows_ms - rows2_ms,
            "ms",
            target=target,
            met=met,
            note=(
                f"first {rows_ms:.1f} ms, next {rows2_ms:.1f} ms; "
                f"pandas' import before them: {pandas_ms:.0f} ms"
            ),
        )
    )
    target, met = at_most(hook_s, 1.2)
    rows.append(
        row(
            "fresh process: run_sync(timeout=1.0) with an on_model_end hook, first run",
            "elapsed",
            hook_s,
            "s",
            target=target,
            met=met,
            note="the hook reads its row's tokens; ok=" + "/".join(str(h["ok"]) for h in hooked),
        )
    )
    target, met = at_most(ratio, 1.2)
    rows.append(
        row(
            "fresh process: sweep of 3 × a 0.1 s agent, first wall_s ÷ the others'",
            "first configuration's slowdown",
            ratio,
            "×",
            spread=summarize(ratios),
            target=target,
            met=met,
        )
    )
    rows.append(
        row(
            "fresh process: run(timeout=0.5) of an agent whose model takes 0.4 s, first run",
            "elapsed",
            elapsed,
            "s",
            target="<= 0.5 (the timeout)",
            met=slowest <= 0.5,
            note=f"slowest {slowest:.2f} s; ok=" + "/".join(str(t["ok"]) for t in timeouts),
        )
    )
    return {
        "name": "first_run",
        "title": "A fresh process's first run (default install, tokens counted)",
        "params": {"repeats": repeats, "root": str(root)},
        "data": {"run": runs, "sweep": sweeps, "timeout": timeouts, "hook": hooked},
        "rows": rows,
    }
