"""A chain: a fixed sequence of agents, each stage's output the next stage's input.

When the order of the calls is always the same, it belongs in code: no routing decision to get
wrong, and each stage can be tested alone. A stage that fails or times out stops the chain; the
result says which stage, why, and which stages never ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack

from ..errors import UserError
from ..models.base import ModelClient
from ..runtime import Agent, RunKeywords, RunOptions, RunResult, shows_run_keywords, to_text
from . import _runs
from .result import PatternResult

if TYPE_CHECKING:
    import pandas as pd


@dataclass(eq=False, repr=False)
class ChainResult(PatternResult):
    """The outcome of `chain`: every stage that ran, and where it stopped if it did."""

    stages: list[str]
    """Every stage's name, in order (the agents' names, numbered if repeated)."""
    results: dict[str, RunResult]
    """The stages that ran, in order; the last one is the failed stage when not ok."""
    wall_s: float = 0.0

    key_columns = ("stage",)

    def parts(self) -> dict[str, RunResult]:
        """The stages that ran, in order."""
        return self.results

    @property
    def ok(self) -> bool:
        return len(self.results) == len(self.stages) and all(r.ok for r in self.results.values())

    @property
    def output(self) -> Any:
        """The last stage's output (None when the chain stopped)."""
        return self.results[self.stages[-1]].output if self.ok else None

    @property
    def failed(self) -> str | None:
        """The stage that stopped the chain, if one did."""
        return next((name for name, r in self.results.items() if not r.ok), None)

    @property
    def skipped(self) -> list[str]:
        """Stages that never ran because an earlier one failed."""
        return [s for s in self.stages if s not in self.results]

    @property
    def error(self) -> BaseException | None:
        return self.results[self.failed].error if self.failed else None

    @property
    def outcome(self) -> str:
        """``"completed"`` or ``"stopped at <stage>: <why>"``."""
        if self.failed is None:
            return "completed"
        return f"stopped at {self.failed}: {_runs.reason(self.results[self.failed])}"

    @property
    def outputs(self) -> dict[str, Any]:
        """Each completed stage's output, in order."""
        return {name: r.output for name, r in self.results.items() if r.ok}

    def table(self) -> pd.DataFrame:
        """One row per stage, the skipped ones included (status ``skipped``)."""
        import pandas as pd

        rows: list[dict[str, Any]] = []
        for name in self.stages:
            result = self.results.get(name)
            if result is None:
                rows.append({"stage": name, "status": "skipped"})
                continue
            started, ended = _runs.run_window(result)
            rows.append(
                {
                    "stage": name,
                    "agent": result.last_agent.name if result.last_agent else None,
                    "status": _runs.status(result),
                    "reason": None if result.ok else _runs.reason(result),
                    "run_id": result.run_id,
                    "started": started,
                    "ended": ended,
                    "model_calls": result.model_calls,
                    "chars_in": result.chars_in,
                    "output": to_text(result.output) if result.ok else None,
                }
            )
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        shown = to_text(self.output) if self.ok else ""
        shown = f", output={shown[:60] + '...' if len(shown) > 60 else shown!r}" if self.ok else ""
        return (
            f"ChainResult({self.outcome}{shown}, stages={self.stages}, chars_in={self.chars_in:,})"
        )


@shows_run_keywords
async def chain(
    agents: Sequence[Agent] | Mapping[str, Agent],
    input: _runs.Input,
    **options: Unpack[RunKeywords],
) -> ChainResult:
    """Run ``agents`` in order: the first on ``input``, each next one on the previous output.

    Structured outputs are handed on as their JSON. ``timeout`` and ``limits`` apply to each
    stage separately; ``artifacts`` are attached to every stage's run. The other options are
    those of `agentnb.run` (`agentnb.RunOptions`), for every stage.

    ``hooks`` (an `agentnb.Hooks`) see every agent of every stage. ``on_event`` is called
    with every event of every stage as it happens, its ``part`` the stage's name, each stage
    ending with its `RunEnded`: the events ``agentnb.run_streamed(agentnb.chain, agents,
    input)`` yields, as a callback.
    """
    _runs.check_timeout(options.get("timeout"), "chain")
    each = RunOptions.of(**options)
    stages = _stages(agents, each.model)
    t0 = _runs.clock()
    results: dict[str, RunResult] = {}
    current: _runs.Input = input
    for name, agent in stages.items():
        result = await _runs.run_on_clock(agent, current, _runs.for_part(each, name), t0=t0)
        results[name] = result
        if not result.ok:
            break
        current = to_text(result.output)
    return ChainResult(list(stages), results, _runs.clock() - t0)


def _stages(
    agents: Sequence[Agent] | Mapping[str, Agent], model: ModelClient | str | None
) -> dict[str, Agent]:
    if isinstance(agents, Mapping):
        stages = dict(agents)
    elif isinstance(agents, Sequence) and not isinstance(agents, str):
        stages = {}
        for agent in agents:
            name = str(getattr(agent, "name", "stage"))
            label, n = name, 1
            while label in stages:
                n += 1
                label = f"{name}#{n}"
            stages[label] = agent
    else:
        raise UserError("chain() takes a list of agents (or a dict of stage name -> Agent)")
    if not stages:
        raise UserError("chain() needs at least one agent")
    for name, agent in stages.items():
        _runs.check_agent(agent, f"chain(): stage {name!r}", model)
    return stages
