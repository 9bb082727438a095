"""`sweep`: run a function over a parameter grid and gather every model call in one frame.

One row per model call, with the parameters of its configuration as columns, so every table
in `agentnb.measure.tables` is a ``groupby`` away. Failures are data: a configuration whose
function raises (or whose run ends with ``ok=False``) is recorded with its ``error`` and the
sweep goes on. A configuration that made no model call still has one row, with empty call
columns, so that it stays visible in the frame.

Configurations run one after another on the current event loop (so their wall times do not
disturb each other), or, with ``executor=``, as jobs of a ``concurrent.futures``-style
executor: a thread or process pool, or a Dask cluster's ``client.get_executor()`` for grids
that outgrow one machine. Each job runs ``fn`` on a fresh event loop in its worker and sends
back plain rows, so with a process-based executor ``fn`` must be picklable (Dask uses
cloudpickle, which takes closures and lambdas; ``ProcessPoolExecutor`` needs a module-level
function).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import itertools
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .. import checks
from ..errors import UserError
from ..trace.spans import CALL_COLUMNS
from .critical import critical_path

if TYPE_CHECKING:
    import pandas as pd

CONFIG_COLUMNS = ("config", "repeat", "ok", "error", "wall_s", "critical_s")
"""Columns a sweep adds after the parameters: the configuration's index, the repetition, whether
it succeeded, its error text, its wall time and its critical-path bound (seconds)."""

Grid = Mapping[str, Any] | Iterable[Mapping[str, Any]]


def configurations(grid: Grid) -> list[dict[str, Any]]:
    """The configurations of a grid, in order.

    A mapping ``name -> values`` is expanded to its Cartesian product (the last name varying
    fastest; a string or other scalar counts as one value); a list of mappings is taken as is,
    for grids that are not products (``[{"setup": "generalist", "k": 0}, {"setup": "tools", "k": 1}]``).
    """
    if isinstance(grid, Mapping):
        names = list(grid)
        values = [_values(name, grid[name]) for name in names]
        configs = [dict(zip(names, combo)) for combo in itertools.product(*values)]
    elif isinstance(grid, Iterable) and not isinstance(grid, (str, bytes)):
        configs = []
        for item in grid:
            if not isinstance(item, Mapping):
                raise UserError(
                    f"A grid given as a list must hold dicts of parameters, got {type(item).__name__}"
                )
            configs.append(dict(item))
    else:
        raise UserError(
            "grid must be a dict of name -> values ({'k': [1, 2, 3]}) or a list of dicts of parameters"
        )
    reserved = set(CALL_COLUMNS) | set(CONFIG_COLUMNS)
    for config in configs:
        clash = sorted(reserved.intersection(config))
        if clash:
            raise UserError(
                f"Grid parameter name(s) {clash} clash with the sweep's own columns; rename them "
                f"(e.g. {clash[0]!r} -> {clash[0] + '_param'!r}) and map them inside fn."
            )
    return configs


def _values(name: str, values: Any) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        return [values]
    out = list(values)
    if not out:
        raise UserError(f"Grid parameter {name!r} has no values")
    return out


async def sweep(
    fn: Callable[..., Any],
    grid: Grid,
    *,
    repeat: int = 1,
    progress: bool = True,
    executor: Any = None,
) -> pd.DataFrame:
    """Call ``fn(**params)`` for each configuration of ``grid`` (``repeat`` times each).

    ``fn`` returns a `RunResult`, a `FanOut` (anything with ``.calls``), a list of them (run
    one after another), or an awaitable of one of these. Returns one row per model call:
    the parameters, then `CONFIG_COLUMNS`, then the trace's `CALL_COLUMNS`, then any column
    a pattern adds (a fan-out's ``branch``). The frame's ``attrs["params"]`` lists the
    parameter names (the tables group by them by default).

    ``executor``: a ``concurrent.futures``-style executor (``submit`` returning futures) to
    run the configurations on, e.g. ``distributed.Client(...).get_executor()``.
    """
    import pandas as pd

    checks.function(fn, "sweep(fn)", what="a function fn(**params) returning a run")
    checks.positive_int(repeat, "sweep(repeat=...)", optional=False)
    checks.flag(progress, "sweep(progress=...)")
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise checks.fail("sweep(executor=...)", "an executor with submit(...) or None", executor)
    configs = configurations(grid)
    names = list(dict.fromkeys(k for c in configs for k in c))
    jobs = [(i, r, c) for i, c in enumerate(configs) for r in range(repeat)]
    outcomes: list[dict[str, Any] | None] = [None] * len(jobs)
    bar = _progress(len(jobs), progress)
    try:
        if executor is None:
            for n, (_, _, params) in enumerate(jobs):
                outcomes[n] = await run_once(fn, params)
                bar.update(1)
        else:

            def done(n: int, outcome: dict[str, Any]) -> None:
                outcomes[n] = outcome
                bar.update(1)

            args = [(fn, params, i, r) for i, r, params in jobs]
            await on_executor(executor, run_job, args, done)
    finally:
        bar.close()
    columns = [*names, *CONFIG_COLUMNS, *CALL_COLUMNS]
    known = set(columns)
    records: list[dict[str, Any]] = []
    for (i, r, params), outcome in zip(jobs, outcomes):
        assert outcome is not None
        for row in outcome["rows"][:1]:  # a pattern's own columns (a fan-out's branch, ...)
            extra = [c for c in row if c not in known]
            columns.extend(extra)
            known.update(extra)
        head = {
            **params,
            "config": i,
            "repeat": r,
            "ok": outcome["ok"],
            "error": outcome["error"],
            "wall_s": outcome["wall_s"],
            "critical_s": outcome["critical_s"],
        }
        rows = outcome["rows"] or [{}]
        records.extend({**head, **row} for row in rows)
    frame = pd.DataFrame.from_records(records, columns=columns)
    frame.attrs["params"] = names
    return frame


def _progress(total: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, desc="sweep", unit="run")


async def run_once(
    fn: Callable[..., Any],
    params: dict[str, Any],
    then: Callable[[Any], Awaitable[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """Run one configuration and reduce it to plain, picklable data.

    ``then(result)`` adds fields of its own to the outcome while the run's result is still at
    hand (an experiment's spans and score, taken on the worker that ran it)."""
    start = time.perf_counter()
    try:
        result = fn(**params)
        if inspect.isawaitable(result):
            result = await result
        wall = time.perf_counter() - start
        rows, ok, error = result_rows(result)
        critical = critical_path(result)
    except Exception as exc:  # one failing configuration must not end the sweep
        wall = time.perf_counter() - start
        return {
            "rows": [],
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}",
            "wall_s": wall,
            "critical_s": None,
        }
    outcome = {"rows": rows, "ok": ok, "error": error, "wall_s": wall, "critical_s": critical}
    if then is not None:
        outcome.update(await then(result))
    return outcome


def result_rows(result: Any) -> tuple[list[dict[str, Any]], bool, str | None]:
    """The call rows, success and error text of what ``fn`` returned."""
    if isinstance(result, (list, tuple)):
        parts = [result_rows(r) for r in result]
        rows = [row for p in parts for row in p[0]]
        errors = [p[2] for p in parts if p[2]]
        return rows, all(p[1] for p in parts), "; ".join(errors) or None
    trace = getattr(result, "trace", None)
    if trace is not None and getattr(result, "path", None) is None and hasattr(trace, "call_rows"):
        trace.count_tokens()  # each agent's rows in one pass, as result.calls counts them
        rows = [r.as_dict() for r in trace.call_rows]  # the same rows, without a frame
    elif hasattr(result, "calls"):
        rows = result.calls.to_dict("records")
    else:
        raise TypeError(
            f"fn returned {type(result).__name__}; return a RunResult, a FanOut (anything with "
            ".calls) or a list of them"
        )
    ok = bool(getattr(result, "ok", True))
    return rows, ok, None if ok else _error_text(result)


def _error_text(result: Any) -> str:
    error = getattr(result, "error", None)
    if error is not None:
        return (
            f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
        )
    missing = getattr(result, "missing", None)
    if missing:
        if isinstance(missing, Mapping):
            return "missing: " + ", ".join(f"{k} ({v})" for k, v in missing.items())
        return f"missing: {missing}"
    return "not ok"


def run_job(fn: Callable[..., Any], params: dict[str, Any], index: int, rep: int) -> dict[str, Any]:
    """One configuration as a synchronous job for an executor: ``fn`` runs on a fresh event loop.

    ``index`` and ``rep`` are unused here but make every submission distinct, so executors
    that deduplicate identical calls (Dask hashes pure functions) run each repetition.
    """
    del index, rep
    return on_fresh_loop(lambda: run_once(fn, params))


def on_fresh_loop(make: Callable[[], Coroutine[Any, Any, dict[str, Any]]]) -> dict[str, Any]:
    """Run the coroutine ``make()`` to its end on a fresh event loop (an executor's job)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    # This worker thread already runs a loop (an executor running jobs inline): use a thread.
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.update(out=asyncio.run(make())))
    thread.start()
    thread.join()
    out: dict[str, Any] = box["out"]
    return out


async def on_executor(
    executor: Any,
    job: Callable[..., dict[str, Any]],
    jobs: list[tuple[Any, ...]],
    done: Callable[[int, dict[str, Any]], None],
) -> None:
    """Submit ``job(*args)`` for each ``args`` of ``jobs``; ``done(n, outcome)`` as each ends.

    A job that fails on the executor (``fn`` could not be pickled, a worker died) ends as a
    failed outcome. If this coroutine is cancelled (an interrupt), jobs not started are."""

    def failed(exc: BaseException) -> dict[str, Any]:
        return {
            "rows": [],
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}",
            "wall_s": None,
            "critical_s": None,
        }

    async def collect(n: int, future: Any) -> None:
        try:
            if isinstance(future, BaseException):  # submit() itself refused the job
                raise future
            if isinstance(future, concurrent.futures.Future):
                outcome = await asyncio.wrap_future(future)
            else:
                outcome = await asyncio.to_thread(future.result)
        except Exception as exc:  # the job itself failed (e.g. fn could not be pickled)
            outcome = failed(exc)
        done(n, outcome)

    futures: list[Any] = []
    for args in jobs:
        try:
            futures.append(executor.submit(job, *args))
        except Exception as exc:
            futures.append(exc)
    try:
        await asyncio.gather(*(collect(n, f) for n, f in enumerate(futures)))
    except BaseException:
        for future in futures:
            if hasattr(future, "cancel"):
                future.cancel()
        raise
