"""Workloads timed by the overhead benchmark, on zero-latency scripted models.

A `Case` is one run that can be repeated: ``reset()`` rewinds its scripted models (outside the
timed region) and ``run()`` performs the run. Every case checks its own outcome once before it
is timed, so a benchmark never reports the speed of a run that went wrong.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import agentnb as nb

REVIEWERS = 3
TOOL_TURNS = 4
OPINION = "verdict='needs_changes' reason='a guarantee of 100% is an obligation of result'"
TASK = "Assess this clause: the supplier guarantees 100% availability of the service."


@dataclass
class Case:
    name: str
    framework: str
    calls_per_run: int
    """Model calls one run makes: the per-call figure divides by it."""
    run: Callable[[], Awaitable[Any]]
    reset: Callable[[], None]
    check: Callable[[Any], None]

    @property
    def key(self) -> str:
        return f"{self.framework}: {self.name}"


async def sample(case: Case, runs: int, cpu: list[float] | None = None) -> list[float]:
    """Wall-clock microseconds per model call, one sample per run.

    ``cpu`` receives the process CPU time of each run on the same scale: on a busy machine
    the wall clock also counts time the process spent waiting for a core, the CPU time not.
    """
    out: list[float] = []
    for _ in range(runs):
        case.reset()
        start, start_cpu = time.perf_counter(), time.process_time()
        await case.run()
        end, end_cpu = time.perf_counter(), time.process_time()
        out.append((end - start) / case.calls_per_run * 1e6)
        if cpu is not None:
            cpu.append((end_cpu - start_cpu) / case.calls_per_run * 1e6)
    return out


async def side_by_side(
    cases: list[Case], runs: int, block: int = 20
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU samples for each case, taken in interleaved blocks so that drift in the
    machine's load hits every case alike."""
    for case in cases:  # warm up and check the outcome once
        for _ in range(3):
            case.reset()
            case.check(await case.run())
    wall: dict[str, list[float]] = {case.key: [] for case in cases}
    cpu: dict[str, list[float]] = {case.key: [] for case in cases}
    done = 0
    while done < runs:
        size = min(block, runs - done)
        for case in cases:
            gc.collect()  # each block starts clean: no pass over the other framework's garbage
            wall[case.key] += await sample(case, size, cpu[case.key])
        done += size
    return wall, cpu


_COUNTING: dict[str, bool | None] = {"on": None}


def counting(on: bool) -> Callable[[], None]:
    """A reset that turns token counting on (bpe-openai, as a default install without
    tiktoken's files) or off, when it is not already: once per block of interleaved runs."""

    def reset() -> None:
        if _COUNTING["on"] is not on:
            nb.set_tokenizer("bpe-openai" if on else "off")
            _COUNTING["on"] = on

    return reset


def agentnb_hierarchy_fresh(reviewers: int = REVIEWERS, tokens: bool | None = None) -> Case:
    """The hierarchy of `agentnb_hierarchy`, its agents, models and tools built anew for every
    run (as a sweep does), the calls counted from the trace without building a DataFrame.
    ``tokens``: token counting on or off for this case (None: as the process has it)."""

    def build() -> nb.Agent:
        subs = [
            nb.Agent(
                f"reviewer_{i}",
                "Assess the clause from your profile.",
                nb.ScriptedModel([nb.say(OPINION)]),
            ).as_tool(description="Opinion on a clause.")
            for i in range(reviewers)
        ]
        script = [
            [nb.tool_call(f"reviewer_{i}", input=TASK) for i in range(reviewers)],
            nb.say("synthesis"),
        ]
        return nb.Agent(
            "coordinator",
            "Consult every reviewer, then synthesise.",
            nb.ScriptedModel(script),
            tools=subs,
        )

    async def run_fresh() -> Any:
        return await nb.run(build(), TASK)

    name = f"hierarchy, {reviewers} sub-agents, agents built anew every run"
    if tokens is not None:
        name += ", token counting " + ("on" if tokens else "off")
    return Case(
        name,
        "agentnb",
        reviewers + 2,
        run_fresh,
        counting(tokens) if tokens is not None else lambda: None,
        _expect(reviewers + 2, "synthesis"),
    )


def _rewind(models: list[nb.ScriptedModel]) -> Callable[[], None]:
    def reset() -> None:
        for model in models:
            model.requests.clear()  # a list script replays from its first step

    return reset


def _expect(calls: int, output: str) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        if not result.ok or result.model_calls != calls or result.output != output:
            raise RuntimeError(f"benchmark run went wrong: {result!r}")

    return check


async def lookup(key: str) -> str:
    """Look a key up in the reference table."""
    return f"value of {key}"


def agentnb_single(tool_turns: int = TOOL_TURNS) -> Case:
    """One agent calling an async tool ``tool_turns`` times, then answering."""
    script: list[Any] = [nb.tool_call("lookup", key=f"k{i}") for i in range(tool_turns)]
    model = nb.ScriptedModel([*script, nb.say("done")])
    agent = nb.Agent("analyst", "Look up what you need, then answer.", model, tools=[lookup])
    return Case(
        "single agent, tool loop",
        "agentnb",
        tool_turns + 1,
        lambda: nb.run(agent, TASK),
        _rewind([model]),
        _expect(tool_turns + 1, "done"),
    )


def agentnb_hierarchy(reviewers: int = REVIEWERS) -> Case:
    """A coordinator calls ``reviewers`` sub-agents in one turn, then synthesises."""
    models = [nb.ScriptedModel([nb.say(OPINION)]) for _ in range(reviewers)]
    subs = [
        nb.Agent(f"reviewer_{i}", "Assess the clause from your profile.", m).as_tool(
            description="Opinion on a clause."
        )
        for i, m in enumerate(models)
    ]
    coord_model = nb.ScriptedModel(
        [[nb.tool_call(f"reviewer_{i}", input=TASK) for i in range(reviewers)], nb.say("synthesis")]
    )
    coordinator = nb.Agent(
        "coordinator", "Consult every reviewer, then synthesise.", coord_model, tools=subs
    )
    return Case(
        f"hierarchy, {reviewers} sub-agents",
        "agentnb",
        reviewers + 2,
        lambda: nb.run(coordinator, TASK),
        _rewind([coord_model, *models]),
        _expect(reviewers + 2, "synthesis"),
    )
