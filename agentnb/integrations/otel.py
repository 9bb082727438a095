"""OpenTelemetry GenAI spans in and out.

In: any framework that emits spans following OpenTelemetry's GenAI semantic conventions
(pydantic-ai, and others with their instrumentation on) is measured from those spans::

    from agentnb.integrations import otel

    with otel.capture() as cap:              # an in-memory exporter for the block
        coordinator.run_sync("Review the clause.")
    cap.calls                                # one row per model call, agentnb's columns

Out: `export` emits an agentnb run (native or captured) as GenAI spans, so it shows in any
OpenTelemetry backend (Jaeger, Phoenix, Logfire). Needs ``pip install 'agentnb[otel]'``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..runtime import RunResult
from ..trace.spans import Trace
from ._capture import CaptureBlock
from ._otel_in import NO_CONTENT, traces
from ._otel_out import export_trace
from ._rows import reported_usage

try:
    from opentelemetry import trace as otel_trace
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "agentnb.integrations.otel needs OpenTelemetry: pip install 'agentnb[otel]'"
    ) from exc

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["NO_CONTENT", "Capture", "calls_from_spans", "capture", "export", "runs_from_spans"]


def runs_from_spans(spans: Iterable[ReadableSpan]) -> list[RunResult]:
    """Finished GenAI spans as agentnb results, one per OpenTelemetry trace."""
    results = []
    for trace in traces(spans):
        usage = reported_usage(trace)
        failed = any(s.status == "error" for s in trace.spans if s.parent_id is None)
        results.append(RunResult(None, not failed, None, usage, None, trace))
    return results


def calls_from_spans(spans: Iterable[ReadableSpan]) -> pd.DataFrame:
    """One row per model call (agentnb's `CALL_COLUMNS`) from finished GenAI spans.

    Agent, path and depth come from the ``invoke_agent`` spans above each call; characters and
    agentnb's tokens from the recorded messages; the framework's own token usage goes to
    ``provider_tokens_in``/``provider_tokens_out``. Spans that hold no message contents give
    ``chars_in`` empty (the span says why in ``chars_in_reason``).
    """
    import pandas as pd

    if spans is None or isinstance(spans, str | bytes) or not hasattr(spans, "__iter__"):
        raise UserError(
            f"calls_from_spans takes the finished spans (capture.spans, an exporter's "
            f"get_finished_spans()), got {type(spans).__name__}"
        )
    frames = [run.calls for run in runs_from_spans(spans)]
    return pd.concat(frames, ignore_index=True) if frames else Trace("").calls_frame()


class _Dispatch(SpanProcessor):
    """Registered once per tracer provider; hands finished spans to the open captures."""

    def __init__(self) -> None:
        self.exporters: list[InMemorySpanExporter] = []
        self.lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        for exporter in list(self.exporters):
            exporter.export((span,))


_dispatchers: weakref.WeakKeyDictionary[Any, _Dispatch] = weakref.WeakKeyDictionary()


class Capture(CaptureBlock):
    """What `capture` yields: the finished spans and the calls measured from them."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.exporter = InMemorySpanExporter()
        self._dispatch: _Dispatch | None = None

    @property
    def spans(self) -> list[ReadableSpan]:
        """Every span that finished inside the block (the framework's own, unchanged)."""
        return list(self.exporter.get_finished_spans())

    @property
    def runs(self) -> list[RunResult]:
        """The spans as agentnb results, one per trace (tables, plots and `export` take them)."""
        return runs_from_spans(self.spans)

    @property
    def calls(self) -> pd.DataFrame:
        """One row per model call; see `calls_from_spans`."""
        return calls_from_spans(self.spans)

    def __enter__(self) -> Capture:
        dispatch = _dispatchers.get(self.provider)
        if dispatch is None:
            dispatch = _dispatchers[self.provider] = _Dispatch()
            self.provider.add_span_processor(dispatch)
        dispatch.exporters.append(self.exporter)
        self._dispatch = dispatch
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._dispatch is not None and self.exporter in self._dispatch.exporters:
            self._dispatch.exporters.remove(self.exporter)

    def empty_html(self) -> str:
        return "<pre>no GenAI spans</pre>"


def capture(tracer_provider: TracerProvider | None = None) -> Capture:
    """Collect the spans that finish inside the block (``with`` or ``async with``).

    Uses ``tracer_provider`` or the global one; when no SDK provider is set globally, one is
    created and set (OpenTelemetry allows setting the global provider once per process).
    """
    provider = tracer_provider if tracer_provider is not None else otel_trace.get_tracer_provider()
    if tracer_provider is None and not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        otel_trace.set_tracer_provider(provider)
        provider = otel_trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        raise UserError(
            f"capture needs an OpenTelemetry SDK TracerProvider, got {type(provider).__name__}"
        )
    return Capture(provider)


def export(result: Any, tracer_provider: Any = None) -> list[ReadableSpan]:
    """Emit an agentnb run as GenAI spans; returns the spans made, ended.

    ``result`` is a `RunResult`, anything with ``.runs`` (an openai-agents or otel capture)
    or ``.trace``, or a list of these. Uses ``tracer_provider`` or the global one.
    """
    provider = tracer_provider if tracer_provider is not None else otel_trace.get_tracer_provider()
    tracer = provider.get_tracer("agentnb")
    out: list[Any] = []
    for trace in _traces_of(result):
        out.extend(export_trace(trace, tracer))
    return out


def _traces_of(result: Any) -> list[Trace]:
    if isinstance(result, (list, tuple)):
        return [t for item in result for t in _traces_of(item)]
    runs = getattr(result, "runs", None)
    if isinstance(runs, list):
        return [run.trace for run in runs]
    trace = getattr(result, "trace", None)
    if isinstance(trace, Trace):
        return [trace]
    raise UserError(
        f"export takes a RunResult, a capture (with .runs) or a list of them, got {type(result).__name__}"
    )
