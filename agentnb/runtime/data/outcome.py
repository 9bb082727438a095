"""What a tool call came to (`ToolOutcome`) and what an agent's turn leads to (`NextStep`).

A tool call ends in one of four ways, and every reader of it (the run loop, the trace, the
events and hooks, the tool guardrails) reads the same typed value:

- ``ok``: the tool ran; ``message`` is its result.
- ``error``: it could not run or it failed (bad arguments, an unknown tool, an exception, a
  sub-agent that timed out); ``message`` says what went wrong.
- ``rejected``: something in charge said no (a tool guardrail, the approver, the depth and
  recursion guards); ``message`` is what the model is told.
- ``handed_off``: a handoff tool transferred the conversation; ``message`` is the note kept in
  the source agent's history.

`model_text` is the one place that turns an outcome into the text the model reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json

from .transfer import Transfer

OutcomeKind = Literal["ok", "error", "rejected", "handed_off"]
ToolStatus = Literal["ok", "error", "timeout", "refused"]
"""The status a tool call's span ends with."""

ERROR_PREFIX = "ERROR: "
"""How the text of a failed tool call starts, for the model and for a person reading the trace."""


class ToolOutcome(NamedTuple):
    """How one tool call ended; build it with `ok`, `error`, `rejected` or `handed_off`.

    An immutable value (a named tuple: one is made for every tool call, and a frozen dataclass
    costs three times as much to build)."""

    kind: OutcomeKind
    message: str
    """The result, what went wrong, why the call was refused, or a handoff's note."""
    status: ToolStatus = "ok"
    """The tool call span's status: ``ok``, ``error``, ``timeout`` or ``refused``."""
    transfer: Transfer | None = None
    """Where the run goes on (``handed_off`` only)."""

    @classmethod
    def ok(cls, result: str) -> ToolOutcome:
        """A tool that ran; ``result`` is what it returned, as the model reads it."""
        return cls("ok", result)

    @classmethod
    def error(cls, message: str, *, status: ToolStatus = "error") -> ToolOutcome:
        """A call that could not run or failed (``status="timeout"`` for one out of time,
        ``"refused"`` for one a runtime guard did not let through)."""
        return cls("error", message, status)

    @classmethod
    def rejected(cls, message: str) -> ToolOutcome:
        """A call a guardrail or the approver refused; ``message`` is read as it is."""
        return cls("rejected", message, "refused")

    @classmethod
    def handed_off(cls, transfer: Transfer) -> ToolOutcome:
        """A handoff tool that transferred the conversation (see `agentnb.Handoff`)."""
        return cls("handed_off", transfer.note, "ok", transfer)

    @property
    def succeeded(self) -> bool:
        """Whether the tool did what it was asked (ran, or handed off)."""
        return self.kind == "ok" or self.kind == "handed_off"

    @property
    def text(self) -> str:
        """What the model reads (see `model_text`)."""
        return model_text(self)


def model_text(outcome: ToolOutcome) -> str:
    """The text the model reads for a tool call: an error is marked ``ERROR: ...``; a result,
    a rejection (in the words of whoever refused) and a handoff's note are read as they are."""
    if outcome.kind == "error":
        return ERROR_PREFIX + outcome.message
    return outcome.message


@dataclass(frozen=True, slots=True)
class NextStepFinalOutput:
    """The agent answered: ``output`` is its final output (validated, guardrails passed)."""

    output: Any


@dataclass(frozen=True, slots=True)
class NextStepHandoff:
    """The agent handed the conversation over: the run goes on with ``transfer.target``."""

    transfer: Transfer


@dataclass(frozen=True, slots=True)
class NextStepRunAgain:
    """The tools ran; the agent's model is asked again with their results."""


NextStep = NextStepFinalOutput | NextStepHandoff | NextStepRunAgain
"""What an agent's turn leads to."""

RUN_AGAIN = NextStepRunAgain()


def to_text(value: Any) -> str:
    """How a tool's return value reaches the model: text as is, models and data as JSON.

    Plain JSON data (dicts, lists, numbers) is written by `json.dumps`; anything holding what
    pydantic can serialise (models, dataclasses, dates, in lists or dicts) is written as
    pydantic writes a single model (`to_jsonable_python`'s rules, compact), never as a
    Python repr; an object neither knows becomes its ``str``."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        pass
    try:
        return to_json(value, fallback=str).decode()
    except (PydanticSerializationError, TypeError, ValueError):
        return str(value)
