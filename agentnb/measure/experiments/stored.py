"""An experiment as stored: `Experiment` reads its runs, calls and summaries back as frames.

`agentnb.experiment` returns one; `open_experiment` opens one in another process (a new
kernel, a report script), read-only. Each read opens the store afresh, so a frame read while
the experiment still runs holds what has been committed so far.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import checks
from ...errors import UserError
from ..stats import paired, summarize
from .store import CALL_FIELDS, RUN_TOTALS, connect, fault, frame, item_keys, store_path, to_json

if TYPE_CHECKING:
    import pandas as pd

RUN_COLUMNS = (
    "config",
    "trial",
    "item",
    "attempt",
    "ok",
    "error",
    "score",
    "score_error",
    "wall_s",
    "critical_s",
    "timing",
    *RUN_TOTALS,
    "tool_errors",
    "subagent_errors",
    "position",
    "started",
    "ended",
)
"""The columns of `Experiment.runs` after the parameters. ``config`` and ``item`` are the
run's places in the experiment's latest grid and dataset (a run of a configuration or item
no longer in them comes after); ``timing`` says whether ``wall_s`` and ``critical_s`` were
measured or kept from the run that made the cached answers."""

RUN_KEY = ("config", "trial", "item")
IDENTITY = ("params", "trial", "item_key")
"""What a stored run is: its parameters, trial and item content; never its indices."""


class Experiment:
    """One stored experiment (a name and version in a store file)."""

    def __init__(self, path: Path, name: str, version: int) -> None:
        self.path = path
        self.name = name
        self.version = version
        self.made: int | None = None
        """Runs made by the `agentnb.experiment` call that returned this (None when opened)."""
        self.stored: int | None = None
        """Of those, runs committed to the store."""
        self.lost: int | None = None
        """Of those, runs made and not stored (0 unless the store failed)."""
        self.refused: int | None = None
        """Of the stored, runs kept as failed because the store could not hold their values."""

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path, readonly=True)

    def _meta(self, conn: sqlite3.Connection) -> tuple[int, list[str], Any]:
        """The experiment's id, its parameter names (of every revision) and its latest grid
        and dataset."""
        return self._definition(conn)[:3]

    def _definition(self, conn: sqlite3.Connection) -> tuple[int, list[str], Any, list[str]]:
        try:
            row = conn.execute(
                "SELECT id, params, dataset, grid FROM experiments WHERE name = ? AND version = ?",
                (self.name, self.version),
            ).fetchone()
            if row is None:
                raise UserError(
                    f"Experiment {self.name!r} v{self.version} is not in {str(self.path)!r}"
                )
            revisions = conn.execute(
                "SELECT params, dataset, grid FROM revisions WHERE experiment_id = ? "
                "ORDER BY revision",
                (row[0],),
            ).fetchall()
            params: list[str] = []
            for text in [row[1], *(r[0] for r in revisions)]:
                params += [p for p in json.loads(text) if p not in params]
            dataset, grid = (revisions[-1][1], revisions[-1][2]) if revisions else row[2:4]
            configs = [to_json(c) for c in json.loads(grid)]
            return row[0], params, None if dataset is None else json.loads(dataset), configs
        except sqlite3.Error as exc:
            raise fault(self.path, exc) from None
        except (ValueError, TypeError) as exc:  # a value that is not the JSON agentnb wrote
            raise fault(self.path, exc) from None

    @property
    def params(self) -> list[str]:
        """The grid's parameter names (the columns `summary` groups by)."""
        conn = self._connect()
        try:
            return self._meta(conn)[1]
        finally:
            conn.close()

    @property
    def dataset(self) -> list[Any] | None:
        conn = self._connect()
        try:
            return self._meta(conn)[2]  # type: ignore[no-any-return]
        finally:
            conn.close()

    def history(self) -> pd.DataFrame:
        """Every stored run, failed attempts that were run again included (``attempt``)."""
        placed, params = self._stored_runs()
        return self._frame(placed, params)

    def _stored_runs(self) -> tuple[pd.DataFrame, list[str]]:
        """Every stored row of the experiment, placed in its configuration and item, and the
        parameter names."""
        conn = self._connect()
        try:
            exp_id, params, dataset, configs = self._definition(conn)
            runs = _read(conn, "SELECT * FROM runs WHERE experiment_id = ? ORDER BY id", exp_id)
        finally:
            conn.close()
        return _placed(runs, configs, dataset), params

    def _frame(self, runs: pd.DataFrame, params: list[str]) -> pd.DataFrame:
        try:
            return _runs_frame(runs, params)
        except (ValueError, TypeError, KeyError) as exc:
            raise fault(self.path, exc) from None

    @property
    def runs(self) -> pd.DataFrame:
        """One row per run (configuration × trial × item, in that order), its latest attempt:
        the parameters, then `RUN_COLUMNS`. A score is a bool where the score function returned bools."""
        placed, params = self._stored_runs()
        latest = placed.drop_duplicates(subset=list(IDENTITY), keep="last")
        # in the grid's order, whatever order the runs were made in
        latest = latest.sort_values(list(RUN_KEY), kind="stable")
        return self._frame(latest, params)

    @property
    def calls(self) -> pd.DataFrame:
        """One row per model call of the runs in `runs`, as `sweep` gives them: the
        parameters, ``config``, ``trial``, ``item``, ``ok``, ``error``, then the call columns."""
        import pandas as pd

        conn = self._connect()
        try:
            exp_id, params, dataset, configs = self._definition(conn)
            runs = _read(conn, "SELECT * FROM runs WHERE experiment_id = ? ORDER BY id", exp_id)
            calls = _read(
                conn,
                "SELECT calls.* FROM calls JOIN runs ON calls.run = runs.id "
                "WHERE runs.experiment_id = ? ORDER BY calls.rowid",
                exp_id,
            )
        finally:
            conn.close()
        current = _placed(runs, configs, dataset).drop_duplicates(
            subset=list(IDENTITY), keep="last"
        )
        head = self._frame(current, params)[
            [*params, "config", "trial", "item", "ok", "error", "wall_s", "critical_s"]
        ]
        head.index = current["id"].to_numpy()
        calls = calls[calls["run"].isin(head.index)]
        try:
            extra = [json.loads(e) if isinstance(e, str) else {} for e in calls["extra"]]
        except ValueError as exc:
            raise fault(self.path, exc) from None
        body = calls[list(CALL_FIELDS)].reset_index(drop=True)
        body["cached"] = body["cached"].astype(bool)
        out = pd.concat([head.loc[calls["run"].to_numpy()].reset_index(drop=True), body], axis=1)
        if any(extra):
            out = pd.concat([out, pd.DataFrame.from_records(extra)], axis=1)
        out = out.sort_values(list(RUN_KEY), kind="stable").reset_index(drop=True)
        out.attrs["params"] = params
        return out

    @property
    def spans(self) -> pd.DataFrame:
        """Every span of the runs in `runs` (``attrs`` decoded), with the run's ``config``,
        ``trial`` and ``item``."""
        conn = self._connect()
        try:
            exp_id, _, _ = self._meta(conn)
            spans = _read(
                conn,
                "SELECT runs.config, runs.trial, runs.item, runs.attempt, spans.* FROM spans "
                "JOIN runs ON spans.run = runs.id WHERE runs.experiment_id = ? "
                "ORDER BY spans.rowid",
                exp_id,
            )
        finally:
            conn.close()
        try:
            spans["attrs"] = [json.loads(a) if isinstance(a, str) else {} for a in spans["attrs"]]
        except ValueError as exc:
            raise fault(self.path, exc) from None
        return spans

    def summary(
        self,
        metric: str = "score",
        *,
        by: list[str] | None = None,
        method: str = "auto",
        confidence: float = 0.95,
    ) -> pd.DataFrame:
        """One row per configuration (or per group of ``by``): ``n``, ``mean``, ``ci_low``,
        ``ci_high`` of ``metric`` (a column of `runs`) and the ``method`` of the interval
        (`agentnb.measure.stats`). Runs that failed, or whose score failed, are left out."""
        runs = self.runs
        runs = runs[runs["ok"]]
        groups = by if by is not None else runs.attrs["params"]
        return summarize(runs, metric, groups, method=method, confidence=confidence)

    def query(self, sql: str, *args: Any) -> pd.DataFrame:
        """Any read-only SQL on the store (docs/experiments.md describes its tables): a
        statement that would write, attach another file or change a setting is refused."""
        checks.text(sql, "query(sql)", optional=False)
        conn = self._connect()
        conn.set_authorizer(_reads_only)
        try:
            return frame(conn, sql, args)
        except (sqlite3.Error, ValueError, OverflowError) as exc:  # binding errors too
            raise UserError(
                f"The query failed on {str(self.path)!r}: {exc}. It takes one read-only "
                "statement (SELECT ...) and its ? values."
            ) from None
        finally:
            conn.close()

    def __repr__(self) -> str:
        counts = ""
        if self.made is not None:
            counts = f", runs made {self.made}, stored {self.stored}, lost {self.lost}"
        return (
            f"Experiment({self.name!r}, version {self.version}, store {str(self.path)!r}{counts})"
        )


_ALLOWED = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
}


def _reads_only(action: int, *_: Any) -> int:
    """`Experiment.query`'s authorizer: reading only (no ATTACH, PRAGMA, write)."""
    return sqlite3.SQLITE_OK if action in _ALLOWED else sqlite3.SQLITE_DENY


def _placed(runs: pd.DataFrame, configs: list[str], dataset: list[Any] | None) -> pd.DataFrame:
    """The runs with ``config`` and ``item`` their places in the latest grid and dataset
    (matched by parameters and item content); a run of a configuration or an item the latest
    definition no longer holds keeps a place after them, in the order first stored."""
    if runs.empty:
        return runs
    runs = runs.copy()
    known = {text: i for i, text in enumerate(configs)}
    for text in runs["params"]:
        known.setdefault(text, len(known))
    runs["config"] = [known[t] for t in runs["params"]]
    if dataset is not None and "item_key" in runs:
        places = {key: i for i, key in enumerate(item_keys(dataset))}
        for key in runs["item_key"]:
            if key is not None:
                places.setdefault(key, len(places))
        runs["item"] = [places.get(k) if k is not None else None for k in runs["item_key"]]
    return runs


def _read(conn: sqlite3.Connection, sql: str, exp_id: int) -> pd.DataFrame:
    try:
        return frame(conn, sql, (exp_id,))
    except sqlite3.Error as exc:
        path = conn.execute("PRAGMA database_list").fetchone()[2]
        raise fault(Path(path), exc) from None


def _runs_frame(runs: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    import pandas as pd

    configs = {text: json.loads(text) for text in set(runs["params"])}  # a few configurations
    decoded = pd.DataFrame.from_records(
        [configs[p] for p in runs["params"]], columns=params, index=runs.index
    )
    body = runs[list(RUN_COLUMNS)].copy()
    body["ok"] = body["ok"].astype(bool)
    body["item"] = body["item"].astype("Int64")
    if (
        len(runs)
        and (runs["score_type"].dropna() == "bool").all()
        and runs["score_type"].notna().any()
    ):
        body["score"] = [None if pd.isna(v) else bool(v) for v in body["score"]]
    out = pd.concat([decoded, body], axis=1).reset_index(drop=True)
    out.attrs["params"] = params
    return out


def open_experiment(
    name: str,
    store: str | os.PathLike[str] | None = None,
    *,
    version: int | None = None,
) -> Experiment:
    """The experiment ``name`` stored in ``store`` (``agentnb.db`` by default), its newest
    version unless ``version`` is given; read-only."""
    checks.text(name, "open_experiment(name)", optional=False)
    checks.positive_int(version, "open_experiment(version=...)")
    path = store_path(store, "open_experiment")
    conn = connect(path, readonly=True)
    try:
        rows = conn.execute(
            "SELECT name, version FROM experiments ORDER BY name, version"
        ).fetchall()
    except sqlite3.Error as exc:
        raise fault(path, exc) from None
    finally:
        conn.close()
    versions = [v for n, v in rows if n == name]
    if not versions or (version is not None and version not in versions):
        known = sorted({n for n, _ in rows})
        what = f"{name!r}" if version is None else f"{name!r} version {version}"
        raise UserError(
            f"No experiment {what} in {str(path)!r}; it holds {known or 'none'}"
            + (f" (versions {versions})" if versions else "")
        )
    return Experiment(path, name, version if version is not None else max(versions))


def compare(
    experiment: Experiment,
    a: dict[str, Any],
    b: dict[str, Any],
    metric: str = "score",
    *,
    method: str = "auto",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Configuration ``a`` against ``b`` (dicts of parameters) on ``metric``, paired by trial,
    item and the parameters neither names: ``n``, ``diff`` (a − b), ``ci_low``, ``ci_high``,
    ``includes_zero`` (`agentnb.measure.stats.paired`)."""
    if not isinstance(experiment, Experiment):
        raise checks.fail("compare(experiment, ...)", "an Experiment", experiment)
    runs = experiment.runs
    runs = runs[runs["ok"]]
    return paired(runs, runs.attrs["params"], a, b, metric, method=method, confidence=confidence)
