"""How a capture follows openai-agents runs: a frame per run, an agentnb span per step.

Every ``Runner.run`` (or ``run_streamed``) inside a capture gets a `Frame`. A run started at
the top gets its own agentnb `Trace` (its own run id); a run started inside a tool of a run
being captured (``Agent.as_tool``) is a sub-agent: its frame hangs below that tool call's span,
one level deeper, on the same trace. Each model call of each agent goes through a
`MeasuredModel` (`_agents_model`), which times it and asks its frame to `Frame.record` a row;
the SDK's tool hooks give the tool-call spans. Nothing here changes what the SDK sends or
returns.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..models.types import ModelRequest, Usage
from ..trace.history import HistoryTally
from ..trace.sizes import response_chars
from ..trace.spans import Span, Trace
from . import _sdk_items as items
from ._rows import MeasuredWhenRead, Unmeasured, call_row

if TYPE_CHECKING:
    from ._agents_model import MeasuredModel
    from .openai_agents import Capture

FRAME: contextvars.ContextVar[Frame | None] = contextvars.ContextVar(
    "agentnb_oa_frame", default=None
)


@dataclass(eq=False)
class SdkAgentRun:
    """One agent's part of one SDK run: its span, turns and measuring caches."""

    name: str
    path: str
    depth: int
    span: Span
    turn: int = 0
    tally: HistoryTally = field(default_factory=HistoryTally)
    history: items.ItemHistory = field(default_factory=items.ItemHistory)
    specs: dict[int, Any] = field(default_factory=dict)
    models: dict[int, MeasuredModel] = field(default_factory=dict)


class Frame:
    """One SDK run inside a capture (a top-level run or a sub-agent's nested run)."""

    def __init__(
        self,
        capture: Capture,
        trace: Trace,
        parent: Span | None,
        prefix: str,
        depth: int,
        root: bool,
    ) -> None:
        self.capture = capture
        self.trace = trace
        self.parent = parent
        """The span a new agent of this run hangs below (the run's, or the caller's tool call)."""
        self.prefix = prefix
        """What this run's agents' paths start with (the caller's path and a slash)."""
        self.depth = depth
        self.root = root
        self.agents: dict[str, SdkAgentRun] = {}
        self.tools: dict[str, Span] = {}
        self.closed = False

    def agent_run(self, agent: Any) -> SdkAgentRun:
        name = agent.name
        run = self.agents.get(name)
        if run is None:
            path = self.prefix + name
            span = self.trace.start(
                "agent", name, self.parent, agent=name, path=path, depth=self.depth
            )
            run = self.agents[name] = SdkAgentRun(name, path, self.depth, span)
        return run

    def child(self, context: Any) -> Frame:
        """The frame of a run started inside one of this run's tools (a sub-agent)."""
        caller = getattr(getattr(context, "agent", None), "name", None)
        run = self.agents.get(caller) if caller else None
        if run is None and self.agents:
            run = next(reversed(self.agents.values()))
        span = self.tools.get(getattr(context, "tool_call_id", None) or "")
        if span is None and run is not None:
            span = run.span
        prefix = run.path + "/" if run is not None else self.prefix
        return Frame(self.capture, self.trace, span, prefix, self.depth + 1, root=False)

    def tool_started(self, context: Any, agent: Any, tool: Any) -> None:
        run = self.agent_run(agent)
        call_id = getattr(context, "tool_call_id", None) or f"{run.path}:{len(self.tools)}"
        self.tools[call_id] = self.trace.start(
            "tool_call",
            getattr(tool, "name", type(tool).__name__),
            run.span,
            agent=run.name,
            path=run.path,
            depth=run.depth,
            turn=run.turn,
            call_id=call_id,
        )

    def tool_ended(self, context: Any) -> None:
        span = self.tools.get(getattr(context, "tool_call_id", None) or "")
        if span is not None and span.ended is None:
            self.trace.end(span, "ok")

    def finish(self, error: BaseException | None) -> None:
        """End this run's spans (status from ``error``); a top-level run goes to the capture."""
        if self.closed:
            return
        self.closed = True
        status = "ok" if error is None else "error"
        for span in (*self.tools.values(), *(r.span for r in self.agents.values())):
            if span.ended is None:
                self.trace.end(span, status)
        for run in self.agents.values():  # each measuring model refers back to its run
            run.models.clear()
        if self.root:  # the run span, and anything a cut-short sub-agent left open below it
            root = self.trace.spans[0]
            self.trace.close_open_under(root, status)
            if root.ended is None:
                self.trace.end(root, status)

    def record(
        self,
        run: SdkAgentRun,
        span: Span,
        call: dict[str, Any],
        output: list[Any] | None,
        usage: Any,
        status: str,
    ) -> None:
        """Add the row of one finished model call: agentnb's `CallRow.measure` of the call as an
        agentnb request (the span's name is the model's), as a native call is, taken when the
        row is first read. The SDK's items are converted now: it may change them later."""
        history = run.history
        article = self.capture.count == "article"
        history.update(items.as_input_items(call["input"]), article)
        system = call["system_instructions"]
        request = ModelRequest(
            system or "",
            history.messages,
            items.tool_specs(call["tools"], call["handoffs"], run.specs),
            items.output_schema(call["output_schema"]),
            agent=run.name,
        )
        response = items.response(output, usage) if output is not None else None
        sizes = history.article_sizes(system, call["tools"]) if article else None
        row = call_row(
            self.trace.run_id,
            span,
            model=span.name,
            turn=run.turn,
            sizes=None,
            chars_out=response_chars(response) if response is not None else 0,
            tokens=(None, None, ""),
            usage=response.usage if response is not None else Usage(),
            tool_calls=len(response.tool_calls) if response is not None else 0,
            stop_reason=response.stop_reason if response is not None else "error",
            status=status,
            kind=MeasuredWhenRead,
        )
        row.pending = Unmeasured(span, request, response, run.tally, sizes)
        self.trace.call_rows.append(row)
