"""`RunResult`: what a run returns, complete or not."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import AgentRunError
from ...models.types import Message, ToolSpec, Usage
from ...trace.render import result_html, result_text
from ...trace.spans import Span, Trace
from .outcome import to_text
from .run_state import run_state

if TYPE_CHECKING:
    import pandas as pd

    from .approvals import ApprovalRecord, Interruption
    from .context import RunContext
    from .protocols import AgentLike
    from .run_state import RunState


@dataclass(frozen=True)
class AgentSummary:
    """What a pickled or copied `RunResult` keeps of an agent: its name, description, model's
    name and tool specs. The agent itself (its functions, its model's client, a key) stays
    behind, so a result travels to another process, a cache or a store."""

    name: str
    description: str = ""
    model: str | None = None
    tools: tuple[ToolSpec, ...] = ()

    @classmethod
    def of(cls, agent: Any) -> AgentSummary | None:
        if agent is None or isinstance(agent, AgentSummary):
            return agent
        model = getattr(agent, "model", None)
        try:
            specs = tuple(t.spec for t in agent.tool_map().values())
        except Exception:  # a tool that cannot be built: the name is what matters
            specs = ()
        return cls(
            agent.name,
            getattr(agent, "description", ""),
            None if model is None else str(getattr(model, "name", type(model).__name__)),
            specs,
        )


@dataclass(eq=False)
class RunResult:
    """The outcome of one run and its whole trace.

    A failed or interrupted run has ``ok=False``, the exception in ``error``, ``output=None``,
    the last text the agent produced in ``partial``, and every call made so far in ``calls``
    (a run whose session could not store its turn, `SessionNotSaved`, keeps its ``output``).
    """

    output: Any
    """The final answer: text, or the validated pydantic object when the agent has an output_type."""
    ok: bool
    error: BaseException | None
    usage: Usage
    """Provider-reported tokens summed over every call at every depth (None: not reported)."""
    last_agent: AgentLike | AgentSummary | None
    """The agent that answered (differs from the one started when control was handed off);
    an `AgentSummary` in a result that was pickled or deep-copied."""
    trace: Trace = field(repr=False)
    messages: list[Message] = field(default_factory=list, repr=False)
    """The root agent's history, ending with its answer."""
    context: RunContext | None = field(default=None, repr=False)
    partial: str | None = None
    """For a failed run: the last text the agent produced before it stopped."""
    path: str | None = field(default=None, repr=False)
    """For a sub-agent's result: its path; ``calls`` then covers only that subtree."""
    inputs: tuple[Message, ...] = field(default=(), repr=False)
    """The messages the run started from (``new_items`` is what came after them)."""

    @property
    def run_id(self) -> str:
        return self.trace.run_id

    @property
    def calls(self) -> pd.DataFrame:
        """One row per model call, at every depth (columns: `agentnb.trace.CALL_COLUMNS`)."""
        frame = self.__dict__.get("_calls")
        if frame is None or len(frame) != len(self.trace.call_rows):
            frame = self.trace.calls_frame()
            self.__dict__["_calls"] = frame
        if self.path is not None:
            prefix = self.path
            return frame[
                (frame["path"] == prefix) | frame["path"].str.startswith(prefix + "/")
            ].reset_index(drop=True)
        return frame

    @property
    def approvals(self) -> list[ApprovalRecord]:
        """Every approval decision of the run: tool, arguments, who, decision, reason, time."""
        return list(self.context.approvals) if self.context is not None else []

    @property
    def interruptions(self) -> list[Interruption]:
        """For a paused run (``approver="pause"``): the calls waiting for approval."""
        return list(self.context.interruptions) if self.context is not None else []

    def to_state(self, key: str | bytes | None = None) -> RunState:
        """A paused run's state, JSON-able and sealed: ``agentnb.resume(agent, state,
        approvals)`` goes on from it, in this process or another (see
        `agentnb.runtime.engine.resume`). With ``key`` it is signed (HMAC-SHA256), and resume
        needs the same key: keep the key apart from the state."""
        return run_state(self, key)

    def to_input_list(self) -> list[Message]:
        """The conversation so far (the user's input, the answering agent's messages, its tool
        calls and results): ``run(result.last_agent, result.to_input_list() + [Message.user(...)])``
        continues it. The messages are copies: changing one leaves the result as it was."""
        return [_copied(m) for m in self.messages]

    @property
    def new_items(self) -> list[Message]:
        """The messages this run added to its input, in order: the answering agent's tool
        calls, their results and its answer (openai-agents' ``new_items``, as `Message`
        objects). ``to_input_list()`` is the input followed by these."""
        return [m for m in self.messages if not any(m is i for i in self.inputs)]

    @property
    def spans(self) -> list[Span]:
        """Every span of the run (run, agent, model_call, tool_call), in start order."""
        return list(self.trace.spans)

    def span_tree(self) -> list[dict[str, Any]]:
        """The spans as a nested tree of dicts."""
        return self.trace.tree()

    def log_lines(self) -> list[str]:
        """The run's events as JSON lines (run, depth, path, event, ...)."""
        return self.trace.log_lines()

    @property
    def chars_in(self) -> int:
        """Characters sent over the whole run, or a sub-agent's subtree (see
        `agentnb.trace.sizes` for the rule)."""
        return sum(r.chars_in for r in self._rows())

    @property
    def model_calls(self) -> int:
        """Model calls of the run, or of a sub-agent's subtree (as ``calls`` counts them)."""
        return len(self._rows())

    def _rows(self) -> list[Any]:
        rows = self.trace.call_rows
        if self.path is None:
            return rows
        prefix = self.path + "/"
        return [r for r in rows if r.path == self.path or r.path.startswith(prefix)]

    @property
    def final_text(self) -> str:
        """The output as text: JSON for structured outputs."""
        return to_text(self.output)

    def __getstate__(self) -> dict[str, Any]:
        """What a pickle or a deep copy keeps: everything but the live run, the agents reduced
        to `AgentSummary`, the context to its records (see `RunContext.portable`), and an error
        that cannot be pickled to its text."""
        state = dict(self.__dict__)
        state.pop("_calls", None)  # rebuilt from the trace when asked for
        state["last_agent"] = AgentSummary.of(self.last_agent)
        if self.context is not None:
            state["context"] = self.context.portable()
        state["error"] = _portable_error(self.error)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        agent = self.last_agent.name if self.last_agent is not None else None
        if self.ok:
            shown = self.final_text
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            head = f"output={shown!r}"
        else:
            head = f"error={type(self.error).__name__}: {self.error}"
        return f"RunResult(ok={self.ok}, {head}, last_agent={agent!r}, model_calls={self.model_calls}, chars_in={self.chars_in:,})"

    def _repr_html_(self) -> str:
        return result_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython's text form (a terminal; text/plain in a notebook): the tree and cost summary.
        printer.text(result_text(self))


def _portable_error(error: BaseException | None) -> BaseException | None:
    """``error``, or an `AgentRunError` with its text when it cannot be pickled (a user's
    exception with required keyword arguments, or holding something that does not travel)."""
    if error is None:
        return None
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return AgentRunError(f"{type(error).__name__}: {error}")
    return error


def _copied(message: Message) -> Message:
    """A copy of ``message`` and of its tool calls (its measured sizes kept: they are the same)."""
    twin = copy.copy(message)
    twin.tool_calls = tuple(copy.copy(call) for call in message.tool_calls)
    return twin
