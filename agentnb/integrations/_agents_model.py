"""The stand-ins a capture puts between openai-agents and a run: the model and the run hooks.

`MeasuredModel` answers exactly as the agent's own model (it calls it), timing each call and
asking the run's `Frame` to record it; `ForwardedHooks` forwards every hook to the run's own hooks and
opens a span per tool call. A failure to measure never reaches the user's run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agents import RunHooks
from agents.models.interface import Model

from ..trace.spans import Span
from ._agents_frames import Frame, SdkAgentRun
from ._rows import not_measured

_CALL_KEYS = (
    "system_instructions",
    "input",
    "model_settings",
    "tools",
    "output_schema",
    "handoffs",
    "tracing",
)
"""``Model.get_response``'s parameters in order, for a call made with positional arguments."""


class MeasuredModel(Model):
    """Stands in for an agent's model while a capture is open: same answers, timed and measured."""

    def __init__(self, inner: Model, frame: Frame, run: SdkAgentRun) -> None:
        self.inner, self.frame, self.run = inner, frame, run
        self.label = str(getattr(inner, "model", None) or type(inner).__name__)

    def _start(self) -> Span:
        run = self.run
        run.turn += 1
        return self.frame.trace.start(
            "model_call",
            self.label,
            run.span,
            agent=run.name,
            path=run.path,
            depth=run.depth,
            turn=run.turn,
        )

    def _end(self, span: Span, call: dict[str, Any], response: Any, status: str) -> None:
        self.frame.trace.end(span, status)
        output = getattr(response, "output", None) if response is not None else None
        usage = getattr(response, "usage", None) if response is not None else None
        try:
            self.frame.record(self.run, span, call, output, usage, status)
        except Exception as exc:  # measuring must never break the user's run: say why instead
            row = not_measured(
                self.frame.trace.run_id, span, self.label, self.run.turn, status, exc
            )
            self.frame.trace.call_rows.append(row)

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        call = {**dict(zip(_CALL_KEYS, args)), **kwargs} if args else kwargs
        span = self._start()
        try:
            response = await self.inner.get_response(*args, **kwargs)
        except BaseException:
            self._end(span, call, None, "error")
            raise
        self._end(span, call, response, "ok")
        return response

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        call = {**dict(zip(_CALL_KEYS, args)), **kwargs} if args else kwargs
        span, final, status = self._start(), None, "error"
        try:
            async for event in self.inner.stream_response(*args, **kwargs):
                kind = getattr(event, "type", None) or ""
                if kind == "response.completed":
                    final = getattr(event, "response", None)
                elif kind.endswith(".delta") and "ttft_s" not in span.attrs:  # the first token
                    span.attrs["ttft_s"] = self.frame.trace.now() - span.started
                yield event
            status = "ok"
        finally:
            self._end(span, call, final, status)

    def get_retry_advice(self, request: Any) -> Any:
        return self.inner.get_retry_advice(request)

    async def close(self) -> None:
        await self.inner.close()

    async def _cleanup_on_run_end(self, owner: object) -> None:
        await self.inner._cleanup_on_run_end(owner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


_NO_HOOKS: RunHooks[Any] = RunHooks()
"""Stands for "the run has no hooks": the SDK's default ones do nothing, so they are not called."""


class ForwardedHooks(RunHooks[Any]):
    """The run's hooks, forwarded unchanged, plus the tool-call spans."""

    def __init__(self, inner: RunHooks[Any] | None, frame: Frame) -> None:
        self.inner = inner if inner is not None else _NO_HOOKS
        self.frame = frame

    async def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not _NO_HOOKS:
            await self.inner.on_llm_start(*args, **kwargs)

    async def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not _NO_HOOKS:
            await self.inner.on_llm_end(*args, **kwargs)

    async def on_agent_start(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not _NO_HOOKS:
            await self.inner.on_agent_start(*args, **kwargs)

    async def on_agent_end(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not _NO_HOOKS:
            await self.inner.on_agent_end(*args, **kwargs)

    async def on_handoff(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not _NO_HOOKS:
            await self.inner.on_handoff(*args, **kwargs)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        self.frame.tool_started(context, agent, tool)
        if self.inner is not _NO_HOOKS:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        self.frame.tool_ended(context)
        if self.inner is not _NO_HOOKS:
            await self.inner.on_tool_end(context, agent, tool, result)
