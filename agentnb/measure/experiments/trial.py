"""One run of an experiment: made, scored and reduced to plain data, on the driver or a worker.

`attempt` calls ``fn`` through `sweep`'s `run_once`, with the experiment's response-cache
session in the context (`agentnb.models.response_cache`), then takes what the result tells
beyond its call rows while it is at hand: its spans, its score (the score function's own model
calls counted in a session of their own) and its totals. `job_on_worker` is the same as an
executor's job: the cache answers of its trial travel with it and new ones come back.
"""

from __future__ import annotations

import inspect
import math
import numbers
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ...models.response_cache import SESSION, ResponseStore, Session
from ..prices import Prices, call_cost
from ..sweeps import on_fresh_loop, run_once
from .writer import JobResponses


@dataclass(frozen=True, slots=True)
class Job:
    """One run to make: a configuration (its index and parameters), a trial, a dataset item."""

    config: int
    key: str
    params: dict[str, Any]
    trial: int
    item: int | None
    attempt: int
    item_key: str | None = None
    """The item's identity (its content, `agentnb.measure.store.item_keys`)."""
    position: int = 0
    """Where the run stands in the experiment's order (interleaved by trial by default)."""


def job_on_worker(
    job: Job,
    fn: Callable[..., Any],
    score: Callable[..., Any] | None,
    cache: bool | str,
    known: dict[str, dict[str, Any]] | None,
    items: list[Any] | None,
) -> dict[str, Any]:
    """One run as an executor's job: the cache answers come with it, new ones go back."""
    responses = JobResponses(known or {}) if cache is not False else None
    outcome = on_fresh_loop(lambda: attempt(job, fn, score, cache, responses, items))
    if responses is not None:
        outcome["responses"] = responses.new
    return outcome


async def attempt(
    job: Job,
    fn: Callable[..., Any],
    score: Callable[..., Any] | None,
    cache: bool | str,
    responses: ResponseStore | None,
    items: list[Any] | None,
) -> dict[str, Any]:
    """Make one run (and score it): its outcome as plain data, totals included."""
    params = {**job.params, "trial": job.trial}
    if items is not None and job.item is not None:
        params["item"] = items[job.item]
    read, write = cache in (True, "read"), cache in (True, "write")
    session = Session(job.trial, responses, read, write) if cache is not False else None

    async def then(result: Any) -> dict[str, Any]:
        judge = Session(job.trial, responses, read, write) if score is not None else None
        return await _after(result, score, params, judge)

    started = time.time()
    token = SESSION.set(session)
    try:
        outcome = await run_once(fn, params, then)
    finally:
        SESSION.reset(token)
    outcome["started"], outcome["ended"] = started, time.time()
    for row in outcome["rows"]:
        # Not stored. Dropped here so that a run waiting for the writer does not keep the
        # trace's fingerprint objects alive (the garbage collector carried them into its
        # oldest generation, and full collections grew with them), nor sends them back from
        # an executor's worker.
        row.pop("prefix", None)
    outcome.update(_totals(outcome["rows"]))
    outcome.update(_failures(outcome.get("spans") or []))
    outcome["timing"] = _timing(outcome, session)
    return outcome


def _failures(spans: list[tuple[Any, ...]]) -> dict[str, int]:
    """A run's tool calls and sub-agents that did not end ok (a score over a half-failed run
    shows it)."""
    tools = sum(1 for s in spans if s[3] == "tool_call" and s[10] != "ok")
    agents = sum(1 for s in spans if s[3] == "agent" and (s[7] or 0) > 0 and s[10] != "ok")
    return {"tool_errors": tools, "subagent_errors": agents}


def _timing(outcome: dict[str, Any], session: Session | None) -> str:
    """``measured``; ``cached``: every call was answered from the cache, and the run keeps
    the timing of the run that made the answers (``wall_s``, ``critical_s``);
    ``partly cached``: its times mix the replay's and the model's."""
    cached, calls = outcome.get("cached_calls") or 0, outcome.get("calls") or 0
    if session is None or not cached:
        return "measured"
    if cached < calls:
        return "partly cached"
    wall, critical = session.timings[0] if session.timings else (None, None)
    if wall is None:
        return "partly cached"  # answers stored before runs kept their timing
    outcome["wall_s"], outcome["critical_s"] = wall, critical
    return "cached"


async def _after(
    result: Any, score: Callable[..., Any] | None, params: dict[str, Any], judge: Session | None
) -> dict[str, Any]:
    """What the run's result tells beyond its rows: its spans and its score (taken with the
    judge's own model calls counted in ``judge``, apart from the run's)."""
    parts = list(result) if isinstance(result, (list, tuple)) else [result]
    if any(isinstance(getattr(r, "error", None), KeyboardInterrupt) for r in parts):
        raise KeyboardInterrupt  # Ctrl-C inside the run: stop the experiment, do not store it
    out: dict[str, Any] = {"spans": _spans(parts), "score": None, "score_type": None}
    drafts = [len(r.rounds) for r in parts if isinstance(getattr(r, "rounds", None), list)]
    out["rounds"] = sum(drafts) if drafts else None
    out["score_error"] = None
    if score is None or judge is None or not all(getattr(r, "ok", True) for r in parts):
        return out
    token = SESSION.set(judge)
    try:
        value = score(result, **params)
        if inspect.isawaitable(value):
            value = await value
        value = _plain_scalar(value)
        if isinstance(value, bool):
            out["score"], out["score_type"] = float(value), "bool"
        elif isinstance(value, numbers.Real) and not math.isnan(float(value)):
            out["score"], out["score_type"] = float(value), "number"
        else:
            out["score_error"] = (
                f"score returned {type(value).__name__} {value!r}; return a number or a bool"
            )
    except Exception as exc:  # a failing score marks this run's score, the experiment goes on
        out["score_error"] = f"{type(exc).__name__}: {exc}"
    finally:
        SESSION.reset(token)
    out.update(
        judge_calls=judge.calls,
        judge_chars_in=judge.chars_in,
        judge_chars_out=judge.chars_out,
        judge_tokens_in=judge.usage.input_tokens,
        judge_tokens_out=judge.usage.output_tokens,
    )
    return out


def _plain_scalar(value: Any) -> Any:
    """A numpy scalar (``numpy.bool_``, ``numpy.float32``...) as the Python value it holds."""
    if getattr(value, "shape", None) == () and callable(getattr(value, "item", None)):
        try:
            return value.item()
        except (TypeError, ValueError):
            return value
    return value


def _spans(parts: list[Any]) -> list[tuple[Any, ...]]:
    """The span rows of a run's result (every trace of a pattern's runs)."""
    out: list[tuple[Any, ...]] = []
    for part in parts:
        traces = [part.trace] if hasattr(getattr(part, "trace", None), "spans") else []
        if not traces:
            inner = getattr(part, "parts", None)  # a pattern's runs (`PatternResult.parts`)
            runs = inner() if callable(inner) else {}
            traces = [getattr(r, "trace", None) for r in runs.values()]
        for trace in traces:
            if trace is None:
                continue
            for s in trace.spans:
                out.append(
                    (
                        trace.run_id,
                        s.span_id,
                        s.parent_id,
                        s.kind,
                        s.name,
                        s.agent,
                        s.path,
                        s.depth,
                        s.started,
                        s.ended,
                        s.status,
                        s.attrs,
                    )
                )
    return out


_PRICES: dict[str, Any] = {}
"""The default price table, and each model's price once looked up (most runs of an
experiment call the same few models)."""


def _priced(model: Any) -> bool:
    if "" not in _PRICES:
        _PRICES[""] = Prices()
    if model not in _PRICES:
        _PRICES[model] = _PRICES[""].lookup(model) is not None
    return bool(_PRICES[model])


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's totals from its call rows (`agentnb.measure.experiments.store.RUN_TOTALS`)."""
    calls = [r for r in rows if r.get("span_id") is not None]
    cost = 0.0
    for row in calls:
        if row.get("cached") is True:
            continue
        if not _priced(row.get("model")):
            cost = math.nan
            break
        cost += call_cost(row, _PRICES[""])["cost"]
    return {
        "calls": len(calls),
        "cached_calls": sum(1 for r in calls if r.get("cached") is True),
        "chars_in": sum(r.get("chars_in") or 0 for r in calls),
        "chars_out": sum(r.get("chars_out") or 0 for r in calls),
        "tokens_in": _sum(r.get("tokens_in") for r in calls),
        "tokens_out": _sum(r.get("tokens_out") for r in calls),
        "cost": cost if calls else 0.0,
    }


def _sum(values: Iterable[Any]) -> float | None:
    known = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(sum(known)) if known else None
