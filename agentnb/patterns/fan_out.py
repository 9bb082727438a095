"""Fan-out in code: every branch is called, concurrently, each with its own timeout.

When consulting every specialist is mandatory, it is mandatory here rather than in a prompt:
no branch can be skipped by a model judging it irrelevant. A branch that times out or fails
is an explicit entry of `FanOut.missing`, so an aggregate can never be silently incomplete;
it does not cancel its siblings, and what they produced is kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack

from .. import checks
from ..errors import UserError
from ..models.base import ModelClient
from ..runtime import (
    Agent,
    RunContext,
    RunKeywords,
    RunOptions,
    RunResult,
    check_input,
    execute,
    shows_run_keywords,
    to_text,
)
from ..trace.render import fanout_html, fanout_text
from . import _runs
from ._gc_quiet import quiet_gc, settle
from .result import PatternResult

if TYPE_CHECKING:
    import pandas as pd


@dataclass(eq=False, repr=False)
class FanOut(PatternResult):
    """The outcome of `parallel`: what each branch answered, and which did not."""

    names: list[str]
    """The branches, in the order they were given."""
    results: dict[str, RunResult]
    """Every branch's `RunResult` (answered or not), each with its own run id and trace."""
    missing: dict[str, str]
    """Branches that gave no output -> why (``"did not answer within 1.5 s"``, ``"failed: ..."``)."""
    timeout: float | None = None
    max_concurrency: int | None = None
    wall_s: float = 0.0
    """Seconds from the fan-out's start to its last branch's end."""

    key_columns = ("branch",)

    @property
    def ok(self) -> bool:
        """Every branch answered."""
        return not self.missing

    @property
    def outputs(self) -> dict[str, Any]:
        """Branch -> output, for the branches that answered, in the given order."""
        return {n: self.results[n].output for n in self.names if n not in self.missing}

    def parts(self) -> dict[str, RunResult]:
        """Every branch's run, in the order the branches were given."""
        return {name: self.results[name] for name in self.names}

    def table(self) -> pd.DataFrame:
        """One row per branch: status, why it is missing, its run id, timing and size."""
        import pandas as pd

        rows = []
        for name in self.names:
            result = self.results[name]
            started, ended = _runs.run_window(result)
            rows.append(
                {
                    "branch": name,
                    "agent": _agent_name(result),
                    "status": _runs.status(result),
                    "reason": self.missing.get(name),
                    "run_id": result.run_id,
                    "started": started,
                    "ended": ended,
                    "duration": None if started is None or ended is None else ended - started,
                    "model_calls": result.model_calls,
                    "chars_in": result.chars_in,
                    "output": None if name in self.missing else to_text(result.output),
                }
            )
        return pd.DataFrame(rows)

    def __getitem__(self, name: str) -> RunResult:
        return self.results[name]

    def __repr__(self) -> str:
        answered = [n for n in self.names if n not in self.missing]
        missing = f", missing={self.missing!r}" if self.missing else ""
        return (
            f"FanOut(ok={self.ok}, answered={answered}{missing}, model_calls={self.model_calls}, "
            f"chars_in={self.chars_in:,}, wall_s={self.wall_s:.3f})"
        )

    def _repr_html_(self) -> str:
        return fanout_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(fanout_text(self))


def _agent_name(result: RunResult) -> str | None:
    return result.last_agent.name if result.last_agent is not None else None


@shows_run_keywords
async def parallel(
    agents: Mapping[str, Agent] | Sequence[Agent],
    input: _runs.Input | Mapping[str, _runs.Input],
    *,
    max_concurrency: int | None = None,
    **options: Unpack[RunKeywords],
) -> FanOut:
    """Run every agent on ``input`` concurrently and collect each answer.

    ``agents`` maps branch names to agents (a list uses the agents' names). ``input`` is the same
    for every branch, or a mapping branch -> input. ``timeout`` is each branch's own limit, in
    seconds, counted from when the branch starts; ``limits`` apply to each branch separately.
    ``max_concurrency`` caps how many branches run at once (for rate-limited endpoints); the
    others wait for a slot, and their timeout starts when they get one. The other options are
    those of `agentnb.run` (`agentnb.RunOptions`), for every branch.

    ``hooks`` (an `agentnb.Hooks`) see every agent of every branch. ``on_event`` is called
    with every event of every branch as it happens (`AgentStarted`, `TextDelta`, ...), its
    ``part`` the branch's name, each branch ending with its `RunEnded`: the events
    ``agentnb.run_streamed(agentnb.parallel, agents, input)`` yields, as a callback.
    """
    timeout = options.get("timeout")
    _runs.check_timeout(timeout, "parallel")
    checks.positive_int(max_concurrency, "parallel(max_concurrency=...)")
    each = RunOptions.of(**options)
    branches = _branches(agents, each.model)
    inputs = _inputs(input, branches)
    with quiet_gc():
        return await _fan_out(branches, inputs, each, max_concurrency, timeout)


async def _fan_out(
    branches: dict[str, Agent],
    inputs: dict[str, _runs.Input],
    each: RunOptions,
    max_concurrency: int | None,
    timeout: float | None,
) -> FanOut:
    t0 = _runs.clock()

    def context(name: str) -> RunContext:
        return _runs.prepare(branches[name], inputs[name], _runs.for_part(each, name), t0=t0)

    # Every argument is checked before any branch starts: the agents and inputs already, the
    # options (the same for every branch) by making the first branch's context. The others are
    # made as their branches start, so that the first requests go out without waiting for
    # thousands of contexts to be made.
    first = next(iter(branches))
    made = {first: context(first)}
    settle()  # the agents (and that context) stay alive until the fan-out ends
    slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None

    async def branch(name: str) -> RunResult:
        settle()  # the branches started before this one are waiting: what they hold stays
        ctx = made.pop(name) if name in made else context(name)
        try:
            if slots is None:
                return await execute(branches[name], inputs[name], ctx)
            async with slots:
                return await execute(branches[name], inputs[name], ctx)
        finally:
            settle()

    done = await asyncio.gather(*(branch(n) for n in branches))
    results = dict(zip(branches, done))
    missing = {n: _runs.reason(r) for n, r in results.items() if not r.ok}
    return FanOut(list(branches), results, missing, timeout, max_concurrency, _runs.clock() - t0)


def _branches(
    agents: Mapping[str, Agent] | Sequence[Agent], model: ModelClient | str | None
) -> dict[str, Agent]:
    if isinstance(agents, Mapping):
        branches = dict(agents)
    elif isinstance(agents, Sequence) and not isinstance(agents, str):
        branches = {}
        for agent in agents:
            name = str(getattr(agent, "name", ""))
            if name in branches:
                raise UserError(
                    f"parallel(): two agents are named {name!r}; pass a dict of branch name -> agent."
                )
            branches[name] = agent
    else:
        raise UserError("parallel() takes a dict of branch name -> Agent (or a list of agents)")
    if not branches:
        raise UserError("parallel() needs at least one agent")
    for name, agent in branches.items():
        if not isinstance(name, str) or not name:
            raise UserError(f"parallel(): branch names must be non-empty strings, got {name!r}")
        _runs.check_agent(agent, f"parallel(): branch {name!r}", model)
    return branches


def _inputs(
    input: _runs.Input | Mapping[str, _runs.Input], branches: dict[str, Agent]
) -> dict[str, _runs.Input]:
    if not isinstance(input, Mapping):
        check_input(input, "parallel()'s input")
        return dict.fromkeys(branches, input)
    given, wanted = set(input), set(branches)
    if given != wanted:
        raise UserError(
            "parallel(): a mapping of inputs needs exactly one per branch; "
            f"missing {sorted(wanted - given)}, unknown {sorted(given - wanted)}."
        )
    for name in branches:
        check_input(input[name], f"parallel(): branch {name!r}'s input")
    return {name: input[name] for name in branches}
