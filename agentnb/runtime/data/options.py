"""`RunOptions`: the keyword options of a run, checked once, carried as one value.

`agentnb.run`, `run_sync`, `run_streamed` and the patterns (`parallel`, `chain`,
`verify_loop`, `judge`) take the same keywords, typed once as `RunKeywords`
(``**options: Unpack[RunKeywords]``, so a type checker checks every caller); each builds one
`RunOptions` with `RunOptions.of`, whose construction checks every option (a mistake raises
`UserError` before anything starts), and hands it on to `start_context`. An agent called as a
tool has its own options, typed once as `AsToolOptions` (``Agent.as_tool(**options)``).
"""

from __future__ import annotations

import inspect
import sys
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, TypedDict, Union

from pydantic import BaseModel

from ... import checks
from ...errors import UserError
from ...models.base import ModelClient
from ...models.settings import ModelSettings
from ...trace.spans import Listener
from .callbacks import check_callable
from .context import Limits
from .hooks import Hooks, check_hooks
from .session import Session
from .signatures import F, lists_keywords

if TYPE_CHECKING:
    from .context import RunContext
    from .events import Event
    from .result import RunResult


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How to run: limits, documents, the approver and other keyword options of `agentnb.run`."""

    limits: Limits | None = None
    """Limits for the whole run, sub-agents included (None: the defaults of `Limits`)."""
    artifacts: Mapping[str, str] | None = None
    """Documents the agents can hand to sub-agents by handle (``"input"`` is reserved)."""
    max_turns: int | None = None
    """The root agent's turn limit (None: the agent's own ``max_turns``); in a pattern, that of
    each run's agent."""
    timeout: float | None = None
    """Wall-clock seconds for the run; a shortcut for ``Limits(timeout=...)``."""
    approver: Any = None
    """``fn(pending) -> Approval`` (sync or async) for calls that need approval, or
    ``"pause"`` to stop the run at them (see `agentnb.resume`)."""
    deps: Any = None
    """Anything the tools need, reached as ``ctx.run.deps`` in a tool."""
    run_id: str | None = None
    """The run's id (None: 12 random hex digits). A pattern gives it to every run it makes;
    its tables tell the runs apart by their part column."""
    listeners: Sequence[Listener] = ()
    """Deprecated: ``listener(event, span)`` told of every span's start and end. Use
    ``on_event=`` instead, which gets `SpanStarted` / `SpanEnded` with the rest of the run."""
    model: ModelClient | str | None = None
    """The model of every agent of the run that has none (sub-agents included)."""
    model_settings: ModelSettings | None = None
    """Overrides the agents' own `ModelSettings`, field by field."""
    hooks: Hooks | None = None
    """An `agentnb.Hooks` that sees every agent of the run."""
    on_event: Callable[[Event], None] | None = None
    """Called with every event of the run as it happens (`AgentStarted`, `TextDelta`, ...,
    lastly `RunEnded`): the events `agentnb.run_streamed` yields, as a callback, spans'
    `SpanStarted` / `SpanEnded` included. The model calls are streamed, so each has its
    ``ttft_s`` (unless ``stream=False``)."""
    stream: bool | None = None
    """Whether the model calls are streamed (`TextDelta` events, ``ttft_s`` timed). None: when
    there is an ``on_event``. ``on_event`` with ``stream=False`` watches the run's spans,
    tools and agents without changing how the models are called."""
    session: Session | None = None
    """An `agentnb.Session`: its history goes before the input, and the input and the run's
    new items are appended to it when the run ends ok (a failed run appends nothing)."""

    def __post_init__(self) -> None:
        if self.limits is not None and not isinstance(self.limits, Limits):
            raise UserError(f"limits must be agentnb.Limits(...), got {type(self.limits).__name__}")
        checks.positive_int(self.max_turns, "max_turns")
        checks.positive_seconds(self.timeout, "timeout")
        if self.approver is not None and self.approver != "pause" and not callable(self.approver):
            raise UserError(
                f"approver must be a function pending -> agentnb.Approval (sync or async), got "
                f"{type(self.approver).__name__}; agentnb.approve_all / reject_all suit tests."
            )
        artifacts = self.artifacts
        if artifacts is not None:
            if not isinstance(artifacts, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in artifacts.items()
            ):
                raise UserError(
                    "artifacts must be a dict of handle -> text, e.g. {'clause': CLAUSE}"
                )
            if "input" in artifacts:
                raise UserError(
                    "The artifact handle 'input' is reserved for the run's input; choose another."
                )
        if self.run_id is not None and (type(self.run_id) is not str or not self.run_id):
            raise UserError(f"run_id must be a non-empty string or None, got {self.run_id!r}")
        if self.hooks is not None:
            check_hooks(self.hooks, "run(hooks=...)")
        if self.approver is not None and callable(self.approver):
            check_callable(self.approver, "run(approver=...)", ("pending",))
        if self.on_event is not None and callable(self.on_event):
            check_callable(self.on_event, "run(on_event=...)", ("event",))
        if self.on_event is not None and not callable(self.on_event):
            raise UserError(
                f"on_event must be a function on_event(event), got {type(self.on_event).__name__}"
            )
        if self.stream is not None and not isinstance(self.stream, bool):
            raise UserError(f"stream must be True, False or None, got {self.stream!r}")
        if self.session is not None and not isinstance(self.session, Session):
            raise UserError(
                f"session must be agentnb.Session(...), got {type(self.session).__name__}"
            )
        if self.on_event is not None and (
            inspect.iscoroutinefunction(self.on_event)
            or inspect.iscoroutinefunction(type(self.on_event).__call__)
        ):
            name = getattr(self.on_event, "__name__", type(self.on_event).__name__)
            raise UserError(
                "on_event must be a plain function (def on_event(event): ...), called as each "
                f"event happens, got the async function {name}, whose events would never be "
                "delivered; to await events, iterate agentnb.run_streamed(...) instead."
            )
        listeners = self.listeners
        if not isinstance(listeners, (list, tuple)) or not all(callable(f) for f in listeners):
            raise UserError(
                "listeners must be a list of functions listener(event, span), "
                f"got {self.listeners!r}; listeners are deprecated: use on_event=fn(event)"
            )
        if listeners and not isinstance(listeners, _Warned):
            warnings.warn(
                "run(listeners=...) is deprecated and will be removed: pass on_event=fn(event) "
                "instead, which is told of every span as agentnb.SpanStarted / SpanEnded "
                "(event.span is the Span a listener got), with the run's other events.",
                DeprecationWarning,
                stacklevel=_caller_level(),
            )
            object.__setattr__(self, "listeners", _Warned(listeners))  # warned once, not per copy

    @classmethod
    def of(cls, **options: Any) -> RunOptions:
        """Options from keywords, with a `UserError` naming any keyword a run does not take."""
        unknown = sorted(set(options) - KEYWORDS)
        if "parent" in unknown:  # run_sync, run_streamed, a pattern: only agentnb.run takes it
            raise UserError(
                "parent= starts a child run from inside a tool: write `await agentnb.run(agent, "
                "input, parent=ctx)` or `await ctx.delegate(agent, input)` in an async tool."
            )
        if unknown:
            raise UserError(
                f"Unknown run option(s) {', '.join(unknown)}; a run takes {', '.join(sorted(KEYWORDS))}."
            )
        return cls(**options)

    @property
    def run_limits(self) -> Limits | None:
        """``limits`` with ``timeout`` applied (None when neither is set)."""
        if self.timeout is None:
            return self.limits
        return replace(self.limits or Limits(), timeout=self.timeout)


class RunKeywords(TypedDict, total=False):
    """The keyword options of a run, for ``**options: Unpack[RunKeywords]``: each is described
    on `RunOptions`, whose fields these are (a test keeps the two the same)."""

    limits: Limits | None
    artifacts: Mapping[str, str] | None
    max_turns: int | None
    timeout: float | None
    approver: Any
    deps: Any
    run_id: str | None
    listeners: Sequence[Listener]
    model: ModelClient | str | None
    model_settings: ModelSettings | None
    hooks: Hooks | None
    on_event: Callable[[Event], None] | None
    stream: bool | None
    session: Session | None


class _Warned(tuple[Any, ...]):
    """Listeners whose deprecation was reported (a pattern's per-run copies do not repeat it)."""


def _caller_level() -> int:
    """The stack level of the first frame outside agentnb (where the option was written)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("agentnb"):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


KEYWORDS = frozenset(f.name for f in fields(RunOptions))
"""The keyword options a run takes."""

DEFAULT = RunOptions()
"""No options: every default."""


def shows_run_keywords(fn: F) -> F:
    """``fn``, whose ``**options`` are a run's, with a signature that lists them (`RunKeywords`,
    defaults from `RunOptions`): Shift-Tab in Jupyter shows ``timeout``, not ``**options``."""
    return lists_keywords(fn, RunKeywords, {f.name: f.default for f in fields(RunOptions)})


NeedsApproval = Union[bool, Callable[..., Union[bool, Awaitable[bool]]]]  # noqa: UP007
"""``True`` (every call), ``False`` (none), or ``fn(ctx, arguments) -> bool`` (or, as before,
``fn(pending) -> bool``), sync or async."""


class AsToolOptions(TypedDict, total=False):
    """The keyword options of `Agent.as_tool` (each described there), for
    ``**options: Unpack[AsToolOptions]``; the defaults are `AgentTool`'s."""

    max_turns: int | None
    timeout: float | None
    max_tokens: int | None
    max_result_chars: int | None
    input_schema: type[BaseModel] | None
    input_builder: Callable[[Any, RunContext], str] | None
    extractor: Callable[[RunResult], str | Awaitable[str]] | None
    needs_approval: NeedsApproval
    input_guardrails: Sequence[Callable[..., Any]] | None
    output_guardrails: Sequence[Callable[..., Any]] | None
    propagate_guardrails: bool
    is_enabled: Any
    by_handle: bool | None


AS_TOOL_KEYWORDS = frozenset(AsToolOptions.__annotations__)
"""The keyword options `Agent.as_tool` takes."""
