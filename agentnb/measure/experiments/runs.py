"""`experiment`: many runs (configurations × trials × dataset items), stored as each one ends.

Built on `sweep`'s machinery (`configurations`, `run_once`, executors): what an experiment adds
is the store (`agentnb.measure.experiments.store`), resuming, the response cache, scores and statistics.
Each (configuration, trial, item) that ended ``ok`` is stored once and skipped when the same
experiment runs again; one that failed is run again, its failed row kept beside the new one.
A changed ``fn``, grid or dataset under the same name is refused unless ``resume`` says what
to do, so two versions are never silently mixed.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ... import checks
from ...errors import UserError
from ...runtime import in_notebook
from ..sweeps import CONFIG_COLUMNS, Grid, configurations, on_executor
from .live import LiveSummary
from .store import RUN_FIELDS, connect, store_path, to_json
from .stored import Experiment
from .trial import Job, attempt, job_on_worker
from .writer import StoreResponses, Writer

RESUME_MODES = (None, "continue", "new")
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
    path = store_path(store, "experiment")
    conn = connect(path)
    try:
        parts = {"fn": _source(fn), "grid": [keyed(c) for c in configs], "dataset": items}
        exp_id, version = _begin(conn, path, name, parts, configs, resume)
        jobs, skipped = _todo(conn, exp_id, configs, trials, items)
        writer = Writer(path)
        responses = StoreResponses(conn, writer) if cache is not False else None
        bar = _progress(name, len(jobs) + skipped, skipped, progress)
        counts = {"failed": 0, "cached": 0}
        metric = "score" if score is not None else "calls"
        names = list(dict.fromkeys(k for c in configs for k in c))
        live = LiveSummary(names, metric) if progress and in_notebook() else None

        def done(job: Job, outcome: dict[str, Any]) -> None:
            for key, entry in outcome.pop("responses", {}).items():
                assert responses is not None
                responses.put(key, entry)
            record, rows, spans = _record(exp_id, job, outcome)
            writer.put_run(record, rows, spans)
            counts["failed"] += not outcome["ok"]
            counts["cached"] += int(record["cached_calls"] or 0)
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
                    done(job, await attempt(job, fn, score, cache, responses, items))
            else:
                args = [
                    (j, fn, score, cache, responses.of_trial(j.trial) if responses else None, items)
                    for j in jobs
                ]
                await on_executor(executor, job_on_worker, args, lambda n, o: done(jobs[n], o))
        finally:
            bar.close()
            writer.close()
            if live is not None:
                live.draw()
    finally:
        conn.close()
    return Experiment(path, name, version)


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


def _begin(
    conn: Any,
    path: Any,
    name: str,
    parts: dict[str, Any],
    configs: list[dict[str, Any]],
    resume: str | None,
) -> tuple[int, int]:
    """The experiment's row: the stored one (resumed) or a new version; a `UserError` when the
    stored one was run with another fn, grid or dataset and ``resume`` does not say what to do."""
    fingerprint = {k: _digest(v) for k, v in parts.items()}
    row = conn.execute(
        "SELECT id, version, fingerprint FROM experiments WHERE name = ? ORDER BY version DESC",
        (name,),
    ).fetchone()
    if row is not None and resume != "new":
        exp_id, version, stored = row[0], row[1], json.loads(row[2])
        changed = [k for k in ("fn", "grid", "dataset") if stored.get(k) != fingerprint[k]]
        if not changed:
            return exp_id, version
        if resume == "continue":
            with conn:
                conn.execute(
                    "UPDATE experiments SET fingerprint = ?, fn = ?, grid = ?, dataset = ? "
                    "WHERE id = ?",
                    (to_json(fingerprint), parts["fn"], to_json(configs), _dataset(parts), exp_id),
                )
            return exp_id, version
        raise UserError(
            f"Experiment {name!r} in {str(path)!r} was run with another {' and '.join(changed)}. "
            "Pass resume='continue' to keep what is stored and run what is missing, "
            "resume='new' to store a new version beside it, or give it another name."
        )
    version = 1 if row is None else row[1] + 1
    params = list(dict.fromkeys(k for c in configs for k in c))
    with conn:
        cursor = conn.execute(
            "INSERT INTO experiments (name, version, fingerprint, fn, grid, dataset, params, "
            "created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                name,
                version,
                to_json(fingerprint),
                parts["fn"],
                to_json(configs),
                _dataset(parts),
                to_json(params),
                time.time(),
            ),
        )
    return int(cursor.lastrowid), version


def _dataset(parts: dict[str, Any]) -> str | None:
    return None if parts["dataset"] is None else to_json(parts["dataset"])


def _todo(
    conn: Any, exp_id: int, configs: list[dict[str, Any]], trials: int, items: list[Any] | None
) -> tuple[list[Job], int]:
    """The runs still to make, and how many are stored already (ended ok)."""
    tried: dict[tuple[str, int, int | None], int] = {}
    ended: set[tuple[str, int, int | None]] = set()
    for key, trial, item, ok in conn.execute(
        "SELECT config_key, trial, item, ok FROM runs WHERE experiment_id = ?", (exp_id,)
    ):
        tried[key, trial, item] = tried.get((key, trial, item), 0) + 1
        if ok:
            ended.add((key, trial, item))
    jobs, skipped = [], 0
    indices: list[int | None] = list(range(len(items))) if items is not None else [None]
    for i, config in enumerate(configs):
        key = keyed(config)
        for trial in range(trials):
            for item in indices:
                if (key, trial, item) in ended:
                    skipped += 1
                else:
                    n = tried.get((key, trial, item), 0)
                    jobs.append(Job(i, key, config, trial, item, n + 1))
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
        attempt=job.attempt,
        ok=int(bool(outcome["ok"])),
    )
    return record, outcome["rows"], outcome.get("spans") or []
