"""Deterministic aggregation: when the rule is known, it is a function, not a prompt.

"The overall verdict is the harshest" left to a model may come back as an impressionistic
average; `harshest` applies the declared severity order and cannot be talked out of it.
`majority` counts votes; `judge` is the one place a model is asked to compare candidates, and
it answers with a structured verdict (an index and a reason) that code maps back to a candidate.

Each helper refuses a `FanOut` with missing branches: an aggregate of the branches that happened
to answer must be asked for explicitly (``harshest(fan.outputs, ...)``), never made by accident.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

from pydantic import BaseModel, Field

from ..errors import UserError
from ..runtime import Agent, RunKeywords, RunOptions, RunResult, shows_run_keywords, to_text
from . import _runs
from .fan_out import FanOut

if TYPE_CHECKING:
    import pandas as pd


def _items(outputs: Any, who: str) -> list[tuple[Any, Any]]:
    """(key, output) pairs from a dict, a list or a complete `FanOut`."""
    if isinstance(outputs, FanOut):
        if not outputs.ok:
            raise UserError(
                f"{who}(): the fan-out is incomplete, missing {outputs.missing}. Decide what a missing "
                f"branch means (usually: no verdict), or aggregate what answered explicitly with "
                f"{who}(fanout.outputs, ...)."
            )
        outputs = outputs.outputs
    if isinstance(outputs, Mapping):
        items = list(outputs.items())
    elif isinstance(outputs, Sequence) and not isinstance(outputs, (str, bytes)):
        items = list(enumerate(outputs))
    else:
        raise UserError(f"{who}() takes a dict or a list of outputs, got {type(outputs).__name__}")
    if not items:
        raise UserError(f"{who}() got no outputs to aggregate")
    return items


def _value(output: Any, field_name: str | None, key: Any, who: str) -> Any:
    if field_name is None:
        return output
    if isinstance(output, Mapping):
        if field_name in output:
            return output[field_name]
    elif hasattr(output, field_name):
        return getattr(output, field_name)
    raise UserError(f"{who}(): output {key!r} has no field {field_name!r}: {to_text(output)[:200]}")


def harshest(outputs: Any, field: str = "verdict", *, order: Sequence[Any]) -> Any:
    """The output whose ``field`` is worst by ``order`` (mildest first, harshest last).

    ``outputs`` is a dict (e.g. ``FanOut.outputs``), a list, or a complete `FanOut`; outputs may
    be pydantic objects or dicts. On a tie the first in order wins. A value missing from
    ``order`` is an error: the severity of every possible value must be declared.
    """
    order = list(order)
    if not order:
        raise UserError("harshest(order=[...]) needs the severity order, mildest first")
    rank = {value: i for i, value in enumerate(order)}
    if len(rank) != len(order):
        raise UserError(f"harshest(order=...) lists a value twice: {order}")
    best: tuple[int, Any] | None = None
    for key, output in _items(outputs, "harshest"):
        value = _value(output, field, key, "harshest")
        if value not in rank:
            raise UserError(
                f"harshest(): {field}={value!r} of output {key!r} is not in order={order}; declare its severity."
            )
        if best is None or rank[value] > best[0]:
            best = (rank[value], output)
    assert best is not None
    return best[1]


@dataclass(frozen=True)
class Vote:
    """The count of a `majority` vote."""

    winner: Any
    """The value with the most votes; ``None`` when two or more values tie for first."""
    counts: dict[Any, int]
    """Value -> votes, most votes first (values that are not hashable are keyed by their JSON)."""
    voters: dict[Any, list[Any]]
    """Value -> the keys (branch names or indexes) that voted for it."""
    total: int

    @property
    def tied(self) -> bool:
        return self.winner is None

    @property
    def share(self) -> float:
        """The winner's share of the votes (0.0 on a tie)."""
        return 0.0 if self.tied else max(self.counts.values()) / self.total

    @property
    def absolute(self) -> bool:
        """The winner has more than half of the votes."""
        return self.share > 0.5


def majority(outputs: Any, field: str | None = None) -> Vote:
    """Count the outputs (or their ``field``) and return the `Vote`: winner, counts, voters."""
    counts: dict[Any, int] = {}
    voters: dict[Any, list[Any]] = {}
    values: dict[Any, Any] = {}
    items = _items(outputs, "majority")
    for key, output in items:
        value = _value(output, field, key, "majority")
        try:
            hash(value)
            vote_key = value
        except TypeError:
            vote_key = to_text(value)
        values.setdefault(vote_key, value)
        counts[vote_key] = counts.get(vote_key, 0) + 1
        voters.setdefault(vote_key, []).append(key)
    ranked = dict(
        sorted(counts.items(), key=lambda kv: -kv[1])
    )  # stable: ties keep first-seen order
    top = list(ranked.values())
    winner = None if len(top) > 1 and top[0] == top[1] else values[next(iter(ranked))]
    return Vote(winner, ranked, {k: voters[k] for k in ranked}, len(items))


class JudgeVerdict(BaseModel):
    """A judge's structured answer: which candidate is best, and why."""

    best: int = Field(
        ge=0, description="The number of the best candidate, as numbered in the input."
    )
    reason: str = Field(description="Why it is the best, in one or two sentences.")


@dataclass(eq=False)
class Judgement:
    """The outcome of `judge`."""

    ok: bool
    best: Any
    """The chosen candidate's key (its name in a dict, its index in a list); None if not ok."""
    output: Any
    """The chosen candidate itself."""
    verdict: Any
    """The judge's structured answer (a `JudgeVerdict` unless the judge declares its own)."""
    result: RunResult = field(repr=False)
    candidates: dict[Any, Any] = field(repr=False)
    error: str | None = None

    @property
    def reason(self) -> str | None:
        return getattr(self.verdict, "reason", None)

    @property
    def calls(self) -> pd.DataFrame:
        return self.result.calls

    def __repr__(self) -> str:
        if not self.ok:
            return f"Judgement(ok=False, error={self.error!r})"
        return f"Judgement(best={self.best!r}, reason={self.reason!r})"


@shows_run_keywords
async def judge(
    judge_agent: Agent,
    candidates: Any,
    task: str | None = None,
    **options: Unpack[RunKeywords],
) -> Judgement:
    """Ask ``judge_agent`` which of ``candidates`` is best; map its answer back to a candidate.

    Candidates (a dict, a list or a complete `FanOut`) are shown numbered from 0, without their
    names, so a name cannot sway the choice. The judge answers with a `JudgeVerdict` unless its
    ``output_type`` is another model with an integer ``best`` field. ``options`` are those of
    `agentnb.run` (`agentnb.RunOptions`), for the judge's run.
    """
    _runs.check_timeout(options.get("timeout"), "judge")
    each = RunOptions.of(**options)
    _runs.check_agent(judge_agent, "judge(judge_agent)", each.model)
    items = _items(candidates, "judge")
    agent = _with_verdict_type(judge_agent)
    parts = [f"TASK:\n{task}"] if task else []
    parts += [f"CANDIDATE {i}:\n{to_text(output)}" for i, (_, output) in enumerate(items)]
    parts.append(
        f"Choose the best of the {len(items)} candidates (numbered 0 to {len(items) - 1})."
    )
    result = await _runs.run_on_clock(agent, "\n\n".join(parts), each, t0=_runs.clock())
    table = dict(items)
    if not result.ok:
        return Judgement(
            False, None, None, None, result, table, f"the judge {_runs.reason(result)}"
        )
    verdict = result.output
    index = verdict.best
    if not 0 <= index < len(items):
        error = (
            f"the judge chose candidate {index}, but there are {len(items)} (0 to {len(items) - 1})"
        )
        return Judgement(False, None, None, verdict, result, table, error)
    key, output = items[index]
    return Judgement(True, key, output, verdict, result, table)


def _with_verdict_type(agent: Agent) -> Agent:
    output_type = agent.output_type
    if output_type is None:
        return agent.clone(output_type=JudgeVerdict)
    fields = getattr(output_type, "model_fields", None)
    best = fields.get("best") if isinstance(fields, dict) else None
    if best is None or best.annotation is not int:
        raise UserError(
            f"judge(): {agent.name}'s output_type must have an integer field 'best' (the chosen "
            "candidate's number); leave output_type unset to use agentnb.JudgeVerdict."
        )
    return agent
