"""What a paused run's state must hold, checked whole before a resumed run does anything.

`check_shape` checks the types, ranges and fields of every part (pydantic, strict: no string
read as a number, no unknown field); `check_calls` checks that the histories agree with the
calls the state says are waiting: every call a history left unanswered is one the state lists
(waiting for approval, going into a paused sub-agent, or cut short and to run again), with the
same tool and the same arguments. Each failure is a `UserError` naming the field.
"""

from __future__ import annotations

import math
import typing
from dataclasses import fields
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from ...errors import UserError
from ...trace.calls import CallRow
from .run_state import STATE_VERSION, canonical, unanswered

Count = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class MessageState(_Strict):
    role: Literal["user", "assistant", "tool"]
    content: str | None
    tool_calls: list[Annotated[list[str], Field(min_length=3, max_length=3)]]
    tool_call_id: str | None
    name: str | None
    generated: bool

    @model_validator(mode="after")
    def _roles(self) -> MessageState:
        if self.role != "assistant" and self.tool_calls:
            raise ValueError(f"a {self.role} message has no tool_calls")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message names the call it answers (tool_call_id)")
        if any(not name or not call_id for name, _, call_id in self.tool_calls):
            raise ValueError("each tool call is [name, arguments, id], name and id not empty")
        return self


class InterruptionState(_Strict):
    call_id: Name
    tool: Name
    arguments: dict[str, Any]
    agent: Name
    path: Name
    arguments_text: str


class RerunState(_Strict):
    path: Name
    call_id: Name
    tool: Name
    arguments_text: str


class SubAgentState(_Strict):
    agent: Name
    turns: Count
    messages: Annotated[list[MessageState], Field(min_length=1)]
    call_id: Name
    """The id of the caller's call that runs this sub-agent."""


class UsageState(_Strict):
    input_tokens: Count | None
    output_tokens: Count | None
    requests: Count
    cached_input_tokens: Count | None
    cache_write_tokens: Count | None
    reasoning_tokens: Count | None


class ApprovalState(_Strict):
    tool: Name
    arguments: Any
    who: str
    decision: Literal["approved", "rejected"]
    reason: str
    time: Seconds
    wait_s: Seconds
    path: str
    call_id: str
    carried: bool


def _column(annotation: Any) -> Any:
    """The state's type for a `CallRow` column: counts not negative, times finite (a float
    that was NaN is written as null), anything else as JSON."""
    optional = type(None) in typing.get_args(annotation)
    base = next((a for a in typing.get_args(annotation) if a is not type(None)), annotation)
    if base is bool or base is str:
        kind: Any = base
    elif base is int:
        kind = Count
    elif base is float:
        kind, optional = Annotated[float, Field(allow_inf_nan=False)], True
    else:
        kind = Any
    return (kind | None if optional else kind, ...)


_ROW_TYPES = typing.get_type_hints(CallRow)
CallRowState = create_model(
    "CallRowState",
    __base__=_Strict,
    **{f.name: _column(_ROW_TYPES[f.name]) for f in fields(CallRow) if f.name != "pending"},
)


class StateShape(_Strict):
    agentnb_state: Literal[3]
    run_id: Name
    agent: Name
    """The root agent running when the run paused (after its handoffs)."""
    path: Name
    """The root agent's path (the name of the agent the run started with)."""
    turns: Count
    messages: Annotated[list[MessageState], Field(min_length=1)]
    interruptions: Annotated[list[InterruptionState], Field(min_length=1)]
    rerun: list[RerunState]
    sub_agents: dict[str, SubAgentState]
    artifacts: dict[str, str]
    input: str
    usage: UsageState
    model_calls: Count
    tokens_used: Count
    """The tokens the run spent before the pause, as its token budget counts them
    (`agentnb.trace.calls.CallRow.budget_tokens`): ``Limits(max_tokens=...)`` counts them too."""
    calls: list[CallRowState]  # type: ignore[valid-type]
    approvals: list[ApprovalState]
    scripts: dict[str, Count]
    integrity: dict[str, Any]


def check_shape(state: Any) -> StateShape:
    """The state's parts, typed, or a `UserError` naming the first field that is wrong."""
    if not isinstance(state, dict):
        raise UserError(
            "resume() takes the state result.to_state() gave (or the same read back from "
            f"JSON), got {type(state).__name__}"
        )
    version = state.get("agentnb_state")
    if version != STATE_VERSION:
        raise UserError(
            f"resume(): agentnb_state is {version!r}, this agentnb reads states of version "
            f"{STATE_VERSION}: resume it with the agentnb that paused it, or run again."
        )
    try:
        return StateShape.model_validate_json(canonical(state), strict=True)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"]) or "the state"
        given = repr(first.get("input"))
        given = given if len(given) <= 60 else given[:57] + "..."
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise UserError(
            f"resume(): the state's {where} is wrong: {first['msg']}, got {given}{more}. "
            "Resume a state only as to_state() wrote it."
        ) from None


def check_calls(
    shape: StateShape, limit_turns: int, limit_calls: int | None, limit_tokens: int | None = None
) -> None:
    """A `UserError` unless every history's unanswered calls are the ones the state lists,
    exactly, and the counters are within the run's limits."""
    histories: dict[str, list[MessageState]] = {shape.path: shape.messages}
    agents = {shape.path: shape.agent}
    for path, sub in shape.sub_agents.items():
        parent = path.rpartition("/")[0]
        if not path.startswith(shape.path + "/") or path == shape.path:
            raise UserError(f"resume(): the state's sub_agents.{path} is not under {shape.path}.")
        histories[path], agents[path] = sub.messages, sub.agent
        if parent not in histories and parent not in shape.sub_agents:
            raise UserError(f"resume(): the state's sub_agents.{path} has no caller in the state.")
    expected: dict[tuple[str, str], tuple[str, str, str]] = {}

    def expect(path: str, call_id: str, tool: str, text: str | None, what: str) -> None:
        if (path, call_id) in expected:
            raise UserError(f"resume(): the state lists call {call_id} at {path} twice ({what}).")
        expected[(path, call_id)] = (tool, text if text is not None else "\0any", what)

    for i, waiting in enumerate(shape.interruptions):
        if agents.get(waiting.path) != waiting.agent:
            raise UserError(
                f"resume(): the state's interruptions.{i}.agent is {waiting.agent!r}, but the "
                f"history at {waiting.path!r} is not that agent's (or there is none)."
            )
        if canonical_text(waiting.arguments_text) != canonical(waiting.arguments):
            raise UserError(
                f"resume(): the state's interruptions.{i}.arguments are not the call's "
                "arguments_text: what was shown is not what would run."
            )
        expect(waiting.path, waiting.call_id, waiting.tool, waiting.arguments_text, "waiting")
    for again in shape.rerun:
        expect(again.path, again.call_id, again.tool, again.arguments_text, "to run again")
    for path, sub in shape.sub_agents.items():
        parent, _, tool = path.rpartition("/")
        expect(parent, sub.call_id, tool, None, f"the call into {path}")
    for path, messages in histories.items():
        calls = unanswered(messages)
        ids = [call_id for _, _, call_id in calls]
        if len(set(ids)) != len(ids):
            raise UserError(
                f"resume(): the history at {path} has two unanswered calls with one id "
                f"({', '.join(sorted({i for i in ids if ids.count(i) > 1}))})."
            )
        for name, text, call_id in calls:
            listed = expected.pop((path, call_id), None)
            if listed is None:
                raise UserError(
                    f"resume(): the history at {path} has a call {name} ({call_id}) the state "
                    "does not list as waiting: it would run unseen."
                )
            tool, shown, what = listed
            if name != tool:
                raise UserError(
                    f"resume(): call {call_id} at {path} is {tool} in the state's record "
                    f"({what}) but {name} in its history (messages: tool name)."
                )
            if shown != "\0any" and text != shown:
                raise UserError(
                    f"resume(): call {call_id} at {path} has other arguments in its history "
                    f"than the state's record ({what}): messages: arguments."
                )
    if expected:
        (path, call_id), (tool, _, what) = next(iter(expected.items()))
        raise UserError(
            f"resume(): the state lists {tool} ({call_id}) at {path} ({what}), but its history "
            "has no such unanswered call."
        )
    if shape.turns > limit_turns:
        raise UserError(
            f"resume(): the state has used {shape.turns} turns, max_turns allows {limit_turns}; "
            "raise max_turns to go on."
        )
    if shape.model_calls != len(shape.calls) or shape.usage.requests > shape.model_calls:
        raise UserError(
            f"resume(): the state's model_calls ({shape.model_calls}) disagree with its calls "
            f"({len(shape.calls)} rows) or usage.requests ({shape.usage.requests})."
        )
    if limit_calls is not None and shape.model_calls > limit_calls:
        raise UserError(
            f"resume(): the run has made {shape.model_calls} model calls, "
            f"Limits(max_model_calls={limit_calls}) allows {limit_calls}; raise it to go on."
        )
    if limit_tokens is not None and shape.tokens_used > limit_tokens:
        raise UserError(
            f"resume(): the run has used {shape.tokens_used:,} tokens before its pause, "
            f"Limits(max_tokens={limit_tokens}) allows {limit_tokens:,}; raise it to go on."
        )


def canonical_text(text: str) -> str:
    """The canonical JSON of the arguments a model sent as text (empty text: no arguments)."""
    import json

    try:
        return canonical(json.loads(text) if text.strip() else {})
    except (ValueError, RecursionError):
        return "\0not json"


def row_values(row: Any) -> dict[str, Any]:
    """A checked row as `CallRow` takes it: null times back to NaN, no prefix."""
    values: dict[str, Any] = row.model_dump()
    for name, value in values.items():
        if value is None and _ROW_TYPES[name] is float:
            values[name] = math.nan
    values["prefix"] = None
    return values
