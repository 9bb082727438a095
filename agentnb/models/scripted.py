"""Offline models: `ScriptedModel` replies from a script, `FunctionModel` from a Python function.

Both record every request they receive, so tests and notebooks can assert on what the model saw.
They ship in the package (not only in the tests) because workshops run on them.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import checks
from ..errors import ScriptExhausted, UserError
from ..words import plural
from .deltas import StreamItem, TextChunk, ToolCallChunk
from .types import ModelRequest, ModelResponse, ToolCall, Usage


@dataclass(slots=True, frozen=True)
class Say:
    """A scripted final answer (or, with tool calls in the same step, accompanying text)."""

    text: str


Step = Say | ToolCall | Sequence[ToolCall] | ModelResponse | str
"""One scripted reply: `say(text)`, `tool_call(...)`, a list of tool calls (one turn, run
concurrently), a ready `ModelResponse`, or a bare string (same as `say`)."""


def say(text: str | Any) -> Say:
    """A final text answer. Dicts and pydantic objects are sent as their JSON."""
    if isinstance(text, str):
        return Say(text)
    if hasattr(text, "model_dump_json"):
        return Say(text.model_dump_json())
    try:
        return Say(json.dumps(text, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        raise checks.fail(
            "say(...)", "text, a pydantic object or a value JSON can encode", text
        ) from None


def tool_call(name: str, /, **arguments: Any) -> ToolCall:
    """A request to call tool ``name`` with keyword ``arguments`` (encoded as JSON)."""
    checks.text(name, "tool_call(name)", empty=False)
    try:
        encoded = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        key, value = next((k, v) for k, v in arguments.items() if not _encodes(v))
        raise checks.fail(
            f"tool_call({name!r}, {key}=...)", "a value JSON can encode", value
        ) from None
    return ToolCall(name=name, arguments=encoded)


def _encodes(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def to_response(step: Step) -> ModelResponse:
    """Turn a script step into the response a real model would have produced."""
    if isinstance(step, ModelResponse):
        return step
    if isinstance(step, str):
        return ModelResponse(text=step)
    if isinstance(step, Say):
        return ModelResponse(text=step.text)
    if isinstance(step, ToolCall):
        return ModelResponse(tool_calls=[_fresh(step)], stop_reason="tool_calls")
    if (
        isinstance(step, (list, tuple))
        and step
        and all(isinstance(s, (ToolCall, Say)) for s in step)
    ):
        calls = [_fresh(s) for s in step if isinstance(s, ToolCall)]
        text = " ".join(s.text for s in step if isinstance(s, Say)) or None
        return ModelResponse(
            text=text, tool_calls=calls, stop_reason="tool_calls" if calls else "stop"
        )
    raise UserError(
        f"Cannot use {step!r} as a script step: use say(text), tool_call(name, **args), "
        "a list of tool_call(...) for one turn, or a ModelResponse."
    )


def _fresh(call: ToolCall) -> ToolCall:
    # A script may reuse one ToolCall object; the runner assigns ids, so each reply gets a copy.
    return ToolCall(call.name, call.arguments, call.id)


Latency = float | Callable[[ModelRequest], float]


class _RecordingModel:
    """Shared parts: a name, a latency, and the list of requests received."""

    def __init__(self, latency: Latency, name: str) -> None:
        if not callable(latency):
            checks.seconds(latency, f"{type(self).__name__}(latency=...)")
        checks.text(name, f"{type(self).__name__}(name=...)", empty=False)
        self.latency = latency
        self.name = name
        self.requests: list[ModelRequest] = []

    async def _wait(self, request: ModelRequest) -> None:
        seconds = self.latency(request) if callable(self.latency) else self.latency
        if seconds:
            await asyncio.sleep(seconds)


class ScriptedModel(_RecordingModel):
    """Replies from a script, one step per request, and records every request.

    ``script`` is a list of steps, or a callable ``request -> step`` for replies that depend
    on what the model received. ``latency`` (seconds, or a callable ``request -> seconds``)
    is awaited before replying, to stand in for a network call.

    Streamed (``agentnb.run_streamed``), a reply's text comes in pieces of ``chunk_chars``
    characters (all at once when None), ``chunk_latency`` seconds apart, and each tool call
    as one piece; the response at the end is the one `request` returns.
    """

    def __init__(
        self,
        script: Sequence[Step] | Callable[[ModelRequest], Step],
        latency: Latency = 0.0,
        *,
        chunk_chars: int | None = None,
        chunk_latency: float = 0.0,
        name: str = "scripted",
    ) -> None:
        super().__init__(latency, name)
        checks.positive_int(chunk_chars, "ScriptedModel(chunk_chars=...)")
        checks.seconds(chunk_latency, "ScriptedModel(chunk_latency=...)")
        self.chunk_chars = chunk_chars
        self.chunk_latency = float(chunk_latency)
        self._skipped = 0
        if callable(script):
            self._fn: Callable[[ModelRequest], Step] | None = script
            self._steps: list[Step] = []
        elif isinstance(script, (list, tuple)):
            self._fn = None
            self._steps = list(script)
            for step in self._steps:  # fail at construction, not mid-run
                to_response(step)
        else:
            raise checks.fail(
                "ScriptedModel(script)", "a list of steps or a function request -> step", script
            )

    @property
    def position(self) -> int:
        """Steps used so far: where the next request reads the script."""
        return len(self.requests) + self._skipped

    def skip_to(self, position: int) -> None:
        """Go on from ``position`` (a paused run's state, resumed in a new process): the
        steps before it count as used."""
        checks.non_negative_int(position, "ScriptedModel.skip_to(position)")
        self._skipped = max(position - len(self.requests), 0)

    @property
    def remaining(self) -> int:
        """Steps not used yet (0 for a callable script)."""
        return max(len(self._steps) - self.position, 0) if self._fn is None else 0

    def assert_complete(self) -> None:
        """Raise AssertionError if some scripted steps were never used."""
        if self.remaining:
            raise AssertionError(
                f"{self.remaining} scripted step(s) of {self.name!r} were never requested"
            )

    async def request(self, request: ModelRequest) -> ModelResponse:
        index = self.position
        self.requests.append(request)
        if self.latency:  # zero latency (benchmarks, most tests): no coroutine to build and await
            await self._wait(request)
        if self._fn is not None:
            return to_response(self._fn(request))
        if index >= len(self._steps):
            who = f"agent {request.agent!r}" if request.agent else "the agent"
            raise ScriptExhausted(
                f"ScriptedModel for {who} ran out of script: it was asked for step {index + 1} "
                f"but holds {len(self._steps)}. Add a step (say(...) or tool_call(...)) or lower max_turns."
            )
        return to_response(self._steps[index])

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The reply of `request`, in pieces (see the class), then the whole response."""
        response = await self.request(request)
        text, size, pause = response.text or "", self.chunk_chars, self.chunk_latency
        pieces = [text[i : i + size] for i in range(0, len(text), size)] if size else [text]
        for i, piece in enumerate(p for p in pieces if p):
            if i and pause:
                await asyncio.sleep(pause)
            yield TextChunk(piece)
        for i, call in enumerate(response.tool_calls):
            if pause and (text or i):
                await asyncio.sleep(pause)
            yield ToolCallChunk(i, call.name, call.arguments, call.id)
        yield response

    def __repr__(self) -> str:
        size = "callable" if self._fn is not None else plural(len(self._steps), "step")
        return f"ScriptedModel({size}, received {plural(len(self.requests), 'request')})"


class FunctionModel(_RecordingModel):
    """Builds each reply with a Python function ``fn(request) -> step`` (sync or async)."""

    def __init__(
        self,
        fn: Callable[[ModelRequest], Step | Awaitable[Step]],
        latency: Latency = 0.0,
        *,
        name: str | None = None,
    ) -> None:
        checks.function(fn, "FunctionModel(fn)", what="a function request -> step")
        checks.text(name, "FunctionModel(name=...)", optional=True)
        super().__init__(latency, name or str(getattr(fn, "__name__", "function")))
        self.fn = fn

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        await self._wait(request)
        step = self.fn(request)
        if inspect.isawaitable(step):
            step = await step
        return to_response(step)

    def __repr__(self) -> str:
        return f"FunctionModel({self.name}, received {plural(len(self.requests), 'request')})"


def usage(input_tokens: int | None = None, output_tokens: int | None = None) -> Usage:
    """A `Usage` to attach to a scripted `ModelResponse`, to simulate provider-reported tokens."""
    return Usage(input_tokens, output_tokens, 1)
