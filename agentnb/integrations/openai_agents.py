"""Measure agents written with openai-agents, without changing them.

::

    from agentnb.integrations import openai_agents

    with openai_agents.capture() as cap:
        await Runner.run(coordinator, clause)    # or run_sync / run_streamed
    cap.calls                                    # one row per model call, agentnb's columns
    agentnb.breakdown(cap)                       # every agentnb table and plot takes it

Under `capture` every model call of every agent is measured on what the SDK hands its model
(instructions, input items, tools, handoffs, output schema): sub-agents called through
``Agent.as_tool`` one level deeper in the path, handoffs as the next agent of the run. It works
with the SDK's tracing disabled. Needs ``pip install 'agentnb[openai-agents]'`` (tested with
openai-agents >=0.24,<0.25); how the SDK's items map onto agentnb's components is in
docs/characters.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar, Token
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from ..errors import UserError
from ..runtime import RunResult
from ..trace.spans import Span, Trace, new_run_id
from . import _sdk_patch
from ._capture import CaptureBlock
from ._rows import reported_usage

try:
    from ._agents_frames import FRAME, Frame
    from ._agents_model import ForwardedHooks, MeasuredModel
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "agentnb.integrations.openai_agents needs openai-agents: pip install 'agentnb[openai-agents]'"
    ) from exc

if TYPE_CHECKING:
    import pandas as pd

Count = Literal["agentnb", "article"]
COUNTS = ("agentnb", "article")

_CAPTURE: ContextVar[Capture | None] = ContextVar("agentnb_oa_capture", default=None)


class Capture(CaptureBlock):
    """What `capture` yields: the runs made inside it, as agentnb results.

    ``count="agentnb"`` measures each call with agentnb's canonical JSON and components;
    ``count="article"`` with the reference article's rule: ``len(instructions) +
    len(json.dumps(input_items)) + len(json.dumps([(name, description, params_json_schema),
    ...]))`` over the tools, each item counted whole toward its component.
    """

    def __init__(self, count: Count) -> None:
        self.count = count
        self.runs: list[RunResult] = []
        """One agentnb `RunResult` per top-level SDK run, in the order they finished."""
        self.t0 = time.perf_counter()
        """The shared clock: every run's span times are seconds since the capture opened."""
        self._token: Token[Capture | None] | None = None

    @property
    def calls(self) -> pd.DataFrame:
        """One row per model call of every run (columns: `agentnb.trace.CALL_COLUMNS`)."""
        import pandas as pd

        frames = [run.calls for run in self.runs]
        return pd.concat(frames, ignore_index=True) if frames else Trace("").calls_frame()

    @property
    def spans(self) -> list[Span]:
        """Every span of every run (run, agent, model_call, tool_call)."""
        return [span for run in self.runs for span in run.spans]

    @property
    def trace(self) -> Trace | None:
        """The trace of the only run; None when there are several (pass ``cap.runs`` to
        `agentnb.plot.timeline`: they share the capture's clock)."""
        return self.runs[0].trace if len(self.runs) == 1 else None

    @property
    def ok(self) -> bool:
        """True when every run finished without an error."""
        return all(run.ok for run in self.runs)

    @property
    def error(self) -> BaseException | None:
        """The first run's error, if a run failed."""
        return next((run.error for run in self.runs if run.error is not None), None)

    def __enter__(self) -> Capture:
        _sdk_patch.install(_get_model, _run, _run_streamed)
        self._token = _CAPTURE.set(self)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _CAPTURE.reset(self._token)
            self._token = None
        _sdk_patch.uninstall()

    def __repr__(self) -> str:
        calls = sum(run.model_calls for run in self.runs)
        chars = sum(run.chars_in for run in self.runs)
        return f"Capture(count={self.count!r}, runs={len(self.runs)}, model_calls={calls}, chars_in={chars:,})"

    def empty_html(self) -> str:
        return f"<pre>{self!r}</pre>"

    def _new_run(self, agent: Any) -> Frame:
        trace = Trace(new_run_id(), t0=self.t0)
        span = trace.start("run", agent.name, None, agent=agent.name, path=agent.name, depth=0)
        return Frame(self, trace, span, "", 0, root=True)

    def _finish(self, frame: Frame, output: Any, error: BaseException | None) -> None:
        frame.finish(error)
        usage = reported_usage(frame.trace)
        result = RunResult(output, error is None, error, usage, None, frame.trace)
        self.runs.append(result)


def capture(count: Count = "agentnb") -> Capture:
    """Measure every openai-agents run inside the block (``with`` or ``async with``).

    ``count`` chooses how characters are counted: ``"agentnb"`` (agentnb's canonical JSON,
    comparable row by row with a system written in agentnb) or ``"article"`` (the reference
    article's rule, which reproduces its published table). Several runs in one block are kept
    apart by run id; a sub-agent's run shares its caller's.
    """
    if count not in COUNTS:
        raise UserError(f"count must be one of {', '.join(map(repr, COUNTS))}, got {count!r}")
    return Capture(count)


def _frame_for(agent: Any, kwargs: dict[str, Any]) -> Frame | None:
    """The frame of a run about to start: a sub-agent's, a new top-level run's, or None."""
    parent = FRAME.get()
    if parent is not None and not parent.closed:
        frame = parent.child(kwargs.get("context"))
    else:
        cap = _CAPTURE.get()
        if cap is None:
            return None
        frame = cap._new_run(agent)
    hooks = kwargs.get("hooks")
    kwargs["hooks"] = ForwardedHooks(
        hooks.inner if isinstance(hooks, ForwardedHooks) else hooks, frame
    )
    return frame


def _done(frame: Frame, output: Any, error: BaseException | None) -> None:
    if frame.root:
        frame.capture._finish(frame, output, error)
    else:
        frame.finish(error)


def _get_model(original: Callable[..., Any]) -> Callable[..., Any]:
    def get_model(agent: Any, run_config: Any) -> Any:
        model = original(agent, run_config)
        frame = FRAME.get()
        if frame is None or frame.closed or isinstance(model, MeasuredModel):
            return model
        run = frame.agent_run(agent)
        measured = run.models.get(id(model))
        if measured is None or measured.inner is not model:
            measured = run.models[id(model)] = MeasuredModel(model, frame, run)
        return measured

    return get_model


def _run(original: Callable[..., Any]) -> Callable[..., Any]:
    async def run(self: Any, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        frame = _frame_for(starting_agent, kwargs)
        if frame is None:
            return await original(self, starting_agent, input, **kwargs)
        token = FRAME.set(frame)
        try:
            result = await original(self, starting_agent, input, **kwargs)
        except BaseException as exc:
            _done(frame, None, exc)
            raise
        finally:
            FRAME.reset(token)
        _done(frame, getattr(result, "final_output", None), None)
        return result

    return run


def _run_streamed(original: Callable[..., Any]) -> Callable[..., Any]:
    def run_streamed(self: Any, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        frame = _frame_for(starting_agent, kwargs)
        if frame is None:
            return original(self, starting_agent, input, **kwargs)
        token = FRAME.set(frame)  # the run's task copies the context: it sees the frame
        try:
            streamed = original(self, starting_agent, input, **kwargs)
        except BaseException as exc:
            _done(frame, None, exc)
            raise
        finally:
            FRAME.reset(token)
        task = getattr(streamed, "run_loop_task", None)
        if task is None:
            _done(frame, getattr(streamed, "final_output", None), None)
        else:

            def finished(task: Any) -> None:
                error = None if task.cancelled() else task.exception()
                _done(frame, getattr(streamed, "final_output", None), error)

            task.add_done_callback(finished)
        return streamed

    return run_streamed
