"""`experiment`: many runs (configurations × trials × dataset items), stored as each one ends.

Built on `sweep`'s machinery (`configurations`, `run_once`, executors): what an experiment adds
is the store (`agentnb.measure.experiments.store`), resuming, the response cache, scores and statistics.
Each (configuration, trial, item) that ended ``ok`` is stored once and skipped when the same
experiment runs again; one that failed is run again, its failed row kept beside the new one.
A run is matched by what it is: its parameters as canonical JSON, its trial and its dataset
item's content, never by positions in the grid or the dataset. A changed ``fn``, grid or
dataset under the same name is refused unless ``resume`` says what to do, so two versions are
never silently mixed. One process at a time runs a given experiment (`agentnb.measure.experiments.owner`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ... import checks
from ...errors import UserError
from ...runtime import in_notebook
from ..sweeps import CONFIG_COLUMNS, Grid, configurations, on_executor
from .live import LiveSummary
from .owner import Owner
from .store import RUN_FIELDS, connect, fault, item_keys, store_path, to_json
from .stored import Experiment
from .trial import Job, attempt, job_on_worker
from .writer import StoreFailed, StoreResponses, Writer

RESUME_MODES = (None, "continue", "new")
MAX_RUNS = 1_000_000
"""The most runs one experiment plans (its plan is a list made before the first run)."""

ORDERS = ("trials", "shuffle", "grid")
"""The order runs are made in: ``"trials"`` (the default) goes round every configuration and
item for trial 0, then for trial 1, and so on, so drift in the machine or the server falls
on every configuration alike; ``"shuffle"`` is a random order seeded by the experiment's name
(the same in every process); ``"grid"`` makes each configuration's runs in a block. Each
run's place in that order is stored (``runs.position``)."""
RESERVED = frozenset({"trial", "item", "attempt", "score", *RUN_FIELDS, *CONFIG_COLUMNS})


async def experiment(
    name: str,
    fn: Callable[..., Any],
    grid: Grid,
    *,
    trials: int = 1,
    dataset: Iterable[Any] | None = None,
    score: Callable[..., Any] | None = None,
    store: str | os.PathLike[str] | None = None,
    cache: bool | str = False,
    resume: str | None = None,
    executor: Any = None,
    progress: bool = True,
    order: str = "trials",
) -> Experiment:
    """Run ``fn`` for every configuration of ``grid``, ``trials`` times (and for every item of
    ``dataset``), writing each run to the store as it ends; returns the `Experiment`.

    ``fn(**params, trial=t)`` (plus ``item=`` the dataset's item when there is a dataset)
    returns a run, as for `sweep`. ``score(run, **params, trial=t, item=...)`` returns a
    number or a bool; one that raises leaves that run's score empty with ``score_error``.
    ``store``: the SQLite file (``agentnb.db`` in the working folder by default).
    ``cache``: the response cache (True: read and write; ``"read"``, ``"write"``; False).
    ``resume``: what to do when ``name`` is stored with another fn, grid or dataset:
    ``"continue"`` (keep what is stored, run what is missing) or ``"new"`` (a new version).
    ``executor``: as for `sweep` (a Dask cluster's ``client.get_executor()``): workers send
    rows back and this process writes them.
    ``order``: the order runs are made in (`ORDERS`): ``"trials"``, ``"shuffle"`` or ``"grid"``.
    A second process running the same experiment in the same store is refused with a
    `UserError` naming the first. A store that stops taking runs raises `StoreFailed` (what
    was committed stays); the `Experiment` returned says how many runs were ``made``,
    ``stored`` and ``lost``.
    """
    checks.text(name, "experiment(name)", optional=False)
    checks.function(fn, "experiment(fn)", what="a function fn(**params, trial=...) returning a run")
    checks.positive_int(trials, "experiment(trials=...)", optional=False)
    if score is not None:
        checks.function(score, "experiment(score=...)", what="a function score(run, **params)")
    if not (isinstance(cache, bool) or cache in ("read", "write")):  # 1 is not True here
        raise checks.fail("experiment(cache=...)", "True, False, 'read' or 'write'", cache)
    checks.one_of(resume, "experiment(resume=...)", RESUME_MODES)
    checks.flag(progress, "experiment(progress=...)")
    checks.one_of(order, "experiment(order=...)", ORDERS)
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise checks.fail(
            "experiment(executor=...)", "an executor with submit(...) or None", executor
        )
    configs = configurations(grid)
    for config in configs:
        clash = sorted(RESERVED.intersection(config))
        if clash:
            raise UserError(
                f"Grid parameter name(s) {clash} clash with the experiment's own columns; rename "
                "them and map them inside fn."
            )
        keyed(config)
    items = _items(dataset)
    plan = _plan(configs, trials, items, order, name)  # refused before the store is touched
    path = store_path(store, "experiment")
    conn = connect(path)
    try:
        with Owner(path, name):
            parts = {"fn": _source(fn), "grid": [keyed(c) for c in configs], "dataset": items}
            try:
                exp_id, version = _begin(conn, path, name, parts, configs, resume)
                jobs, skipped = _todo(conn, exp_id, plan)
            except sqlite3.Error as exc:
                raise fault(path, exc) from None
            writer = Writer(path)
            try:
                await _run_jobs(
                    name,
                    exp_id,
                    jobs,
                    skipped,
                    fn,
                    score,
                    cache,
                    items,
                    executor,
                    progress,
                    configs,
                    conn,
                    path,
                    writer,
                )
            except StoreFailed:
                pass  # raised again by close, with every run counted
            finally:
                try:
                    writer.close()  # raises StoreFailed when the store stopped taking runs
                except StoreFailed as failed:
                    failed.experiment = _counted(Experiment(path, name, version), writer)
                    raise failed from None
    finally:
        conn.close()
    return _counted(Experiment(path, name, version), writer)


def _counted(exp: Experiment, writer: Writer) -> Experiment:
    exp.made, exp.stored, exp.lost = writer.made, writer.stored, writer.made - writer.stored
    exp.refused = writer.refused
    return exp


async def _run_jobs(
    name: str,
    exp_id: int,
    jobs: list[Job],
    skipped: int,
    fn: Callable[..., Any],
    score: Callable[..., Any] | None,
    cache: bool | str,
    items: list[Any] | None,
    executor: Any,
    progress: bool,
    configs: list[dict[str, Any]],
    conn: Any,
    path: Any,
    writer: Writer,
) -> None:
    """Make the runs, handing each to the writer as it ends."""
    responses = StoreResponses(conn, path) if cache is not False else None
    bar = _progress(name, len(jobs) + skipped, skipped, progress)
    counts = {"failed": 0, "cached": 0}
    bar.set_postfix(counts, refresh=False)
    metric = "score" if score is not None else "calls"
    names = list(dict.fromkeys(k for c in configs for k in c))
    live = LiveSummary(names, metric) if progress and in_notebook() else None

    def done(job: Job, outcome: dict[str, Any]) -> None:
        made = list(outcome.pop("responses", {}).items())  # an executor's job sends them back
        if responses is not None:
            made += responses.take()
        record, rows, spans = _record(exp_id, job, outcome)
        for _, entry in made:  # what a later run answered from these keeps as its timing
            entry["wall_s"], entry["critical_s"] = record["wall_s"], record["critical_s"]
        writer.put_run(record, rows, spans, made)
        failed, cached = not outcome["ok"], int(record["cached_calls"] or 0)
        if failed or cached:  # the postfix is formatted anew only when it changes
            counts["failed"] += failed
            counts["cached"] += cached
            bar.set_postfix(counts, refresh=False)
        bar.update(1)
        if live is not None:
            value = record[metric] if outcome["ok"] else None
            if value is not None and record["score_type"] == "bool" and metric == "score":
                value = bool(value)  # pass/fail: a Wilson interval
            live.add(job.params, value)

    try:
        if executor is None:
            for job in jobs:
                try:
                    outcome = await attempt(job, fn, score, cache, responses, items)
                except BaseException:
                    if responses is not None:
                        responses.drop()  # a run cut short stores none of its answers
                    raise
                done(job, outcome)
        else:
            args = [
                (j, fn, score, cache, responses.of_trial(j.trial) if responses else None, items)
                for j in jobs
            ]
            await on_executor(executor, job_on_worker, args, lambda n, o: done(jobs[n], o))
    finally:
        bar.close()
        if live is not None:
            live.draw()


def keyed(config: Mapping[str, Any]) -> str:
    """A configuration as the text it is stored and matched by (a `UserError` for parameters
    that have no stable text, such as objects shown by their memory address)."""
    text = to_json(dict(config))
    if " at 0x" in text:
        raise UserError(
            f"Configuration {dict(config)!r} holds an object with no stable text to store; pass "
            "a name or a number in the grid and build the object inside fn."
        )
    return text


def _items(dataset: Iterable[Any] | None) -> list[Any] | None:
    if dataset is None:
        return None
    if isinstance(dataset, (str, bytes)) or not isinstance(dataset, Iterable):
        raise checks.fail("experiment(dataset=...)", "a list of inputs (any JSON values)", dataset)
    items = list(dataset)
    if not items:
        raise UserError("experiment(dataset=...) is empty; give at least one item or None")
    return items


def _source(fn: Callable[..., Any]) -> str:
    """What identifies ``fn`` across processes: its source, else its qualified name."""
    target = getattr(fn, "func", fn)  # functools.partial
    try:
        return inspect.getsource(target)
    except (OSError, TypeError):
        return f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', repr(fn))}"


def _digest(value: Any) -> str:
    return hashlib.sha256(to_json(value).encode()).hexdigest()[:16]


_DEFINITION = "fingerprint, fn, grid, dataset, params, created"
"""What an experiment was run under, as its ``experiments`` row and each ``revisions`` row
store it."""


def _begin(
    conn: Any,
    path: Any,
    name: str,
    parts: dict[str, Any],
    configs: list[dict[str, Any]],
    resume: str | None,
) -> tuple[int, int]:
    """The experiment's row: the stored one (resumed) or a new version; a `UserError` when the
    stored one was run with another fn, grid or dataset and ``resume`` does not say what to do.
    ``resume="continue"`` under a changed definition adds a ``revisions`` row: what was stored
    under the earlier one stays as it was."""
    fingerprint = _fingerprint(parts)
    row = conn.execute(
        "SELECT id, version, fingerprint FROM experiments WHERE name = ? ORDER BY version DESC",
        (name,),
    ).fetchone()
    params = list(dict.fromkeys(k for c in configs for k in c))
    definition = (
        to_json(fingerprint),
        parts["fn"],
        to_json(configs),
        _dataset(parts),
        to_json(params),
        time.time(),
    )
    if row is not None and resume != "new":
        exp_id, version = row[0], row[1]
        latest = conn.execute(
            "SELECT fingerprint, revision FROM revisions WHERE experiment_id = ? "
            "ORDER BY revision DESC",
            (exp_id,),
        ).fetchone()
        try:
            stored = json.loads(latest[0] if latest else row[2])
            if not isinstance(stored, dict):
                raise TypeError(f"a fingerprint is a JSON object, not {type(stored).__name__}")
        except (ValueError, TypeError) as exc:
            raise fault(path, exc) from None
        changed = [k for k in ("fn", "grid", "dataset") if stored.get(k) != fingerprint[k]]
        if not changed:
            return exp_id, version
        if resume == "continue":
            with conn:
                conn.execute(
                    f"INSERT INTO revisions (experiment_id, revision, {_DEFINITION}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (exp_id, (latest[1] if latest else 1) + 1, *definition),
                )
            return exp_id, version
        raise UserError(
            f"Experiment {name!r} in {str(path)!r} was run with another {' and '.join(changed)}. "
            "Pass resume='continue' to keep what is stored and run what is missing, "
            "resume='new' to store a new version beside it, or give it another name."
        )
    version = 1 if row is None else row[1] + 1
    with conn:
        cursor = conn.execute(
            f"INSERT INTO experiments (name, version, {_DEFINITION}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (name, version, *definition),
        )
    return int(cursor.lastrowid), version


def _fingerprint(parts: dict[str, Any]) -> dict[str, str]:
    """The hashes of fn, grid and dataset; the grid's as a set of configurations (a grid
    value given as a Python set expands in an order that depends on the hash seed)."""
    return {
        "fn": _digest(parts["fn"]),
        "grid": _digest(sorted(parts["grid"])),
        "dataset": _digest(parts["dataset"]),
    }


def _dataset(parts: dict[str, Any]) -> str | None:
    return None if parts["dataset"] is None else to_json(parts["dataset"])


def _plan(
    configs: list[dict[str, Any]], trials: int, items: list[Any] | None, order: str, name: str
) -> list[Job]:
    """Every run of the experiment, in the order they are to be made (`ORDERS`)."""
    total = len(configs) * trials * (len(items) if items is not None else 1)
    if total > MAX_RUNS:  # the plan is made whole before the first run: it must fit
        raise UserError(
            f"experiment({name!r}) would make {total:,} runs ({len(configs)} configuration(s) "
            f"× {trials:,} trial(s)"
            + (f" × {len(items)} item(s)" if items is not None else "")
            + f"); one experiment plans at most {MAX_RUNS:,}. Split it into several experiments "
            "(another name each), or lower trials=."
        )
    keys = [keyed(c) for c in configs]
    ids = item_keys(items) if items is not None else [None]
    indices: list[int | None] = list(range(len(items))) if items is not None else [None]
    cells = [
        (i, t, n) for t in range(trials) for n in range(len(indices)) for i in range(len(configs))
    ]
    if order == "grid":
        cells.sort(key=lambda c: (c[0], c[1], c[2]))
    elif order == "shuffle":
        seed = int(hashlib.sha256(name.encode()).hexdigest()[:16], 16)
        random.Random(seed).shuffle(cells)
    return [
        Job(i, keys[i], configs[i], t, indices[n], 1, ids[n], position)
        for position, (i, t, n) in enumerate(cells)
    ]


def _todo(conn: Any, exp_id: int, plan: list[Job]) -> tuple[list[Job], int]:
    """The runs still to make, and how many are stored already (ended ok), matched by
    parameters, trial and item content."""
    tried: dict[tuple[str, int, str | None], int] = {}
    ended: set[tuple[str, int, str | None]] = set()
    for key, trial, item, ok in conn.execute(
        "SELECT params, trial, item_key, ok FROM runs WHERE experiment_id = ?", (exp_id,)
    ):
        tried[key, trial, item] = tried.get((key, trial, item), 0) + 1
        if ok:
            ended.add((key, trial, item))
    jobs, skipped = [], 0
    for job in plan:
        identity = (job.key, job.trial, job.item_key)
        if identity in ended:
            skipped += 1
        else:
            jobs.append(dataclasses.replace(job, attempt=tried.get(identity, 0) + 1))
    return jobs, skipped


def _progress(name: str, total: int, skipped: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=skipped, disable=not enabled, desc=name, unit="run")


def _record(
    exp_id: int, job: Job, outcome: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]], list[Any]]:
    record = {f: outcome.get(f) for f in RUN_FIELDS}
    record.update(
        experiment_id=exp_id,
        config=job.config,
        config_key=job.key,
        params=job.key,
        trial=job.trial,
        item=job.item,
        item_key=job.item_key,
        attempt=job.attempt,
        position=job.position,
        ok=int(bool(outcome["ok"])),
    )
    return record, outcome["rows"], outcome.get("spans") or []
