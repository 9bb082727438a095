"""Turning what users hold (a sweep frame, a result, a dict of results) into one calls frame.

Every table takes the same inputs, so this is where they are normalised: a DataFrame is used
as is; a `RunResult`, a `FanOut` or anything with ``.calls`` becomes its calls; a dict
``label -> result`` becomes one frame with a ``configuration`` column, one configuration per
label, in the dict's order (handy for a handful of runs that were not made by `sweep`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from .critical import critical_path

if TYPE_CHECKING:
    import pandas as pd

LABEL = "configuration"


def calls_frame(data: Any) -> pd.DataFrame:
    """One calls frame from a sweep frame, a result, a list of results or a dict of them."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, Mapping):
        from .sweeps import result_rows

        parts = []
        for i, (label, item) in enumerate(data.items()):
            if isinstance(item, pd.DataFrame):
                part = item.copy()
                ok, error, critical = True, None, None
            else:
                if not (hasattr(item, "calls") or isinstance(item, (list, tuple))):
                    raise UserError(
                        f"Expected a result, a calls frame or a list of them for {label!r}, "
                        f"got {type(item).__name__}"
                    )
                rows, ok, error = result_rows(item)
                part = pd.DataFrame.from_records(rows or [{}], columns=_call_columns())
                critical = critical_path(item)
            part.insert(0, LABEL, label)
            for name, value in (
                ("config", i),
                ("repeat", 0),
                ("ok", ok),
                ("error", error),
                ("critical_s", critical),
            ):
                if name not in part:
                    part[name] = value
            parts.append(part)
        if not parts:
            raise UserError("The dict of results is empty")
        frame = pd.concat(parts, ignore_index=True)
        frame.attrs["params"] = [LABEL]
        return frame
    if isinstance(data, Sequence) and not isinstance(data, str):
        if not data:
            raise UserError("Expected results or frames to read, got an empty list")
        return pd.concat([calls_frame(d) for d in data], ignore_index=True)
    if hasattr(data, "calls"):
        calls = data.calls
        if isinstance(calls, pd.DataFrame):
            return calls
    raise UserError(
        f"Expected a sweep frame, a calls DataFrame, a result with .calls or a dict of them, "
        f"got {type(data).__name__}"
    )


def _call_columns() -> list[str]:
    from ..trace.spans import CALL_COLUMNS

    return list(CALL_COLUMNS)


def group_columns(frame: pd.DataFrame, by: str | Sequence[str] | None) -> list[str]:
    """The configuration columns: ``by``, else the sweep's parameters, else none (one group)."""
    if by is None:
        names = list(frame.attrs.get("params", []))
    elif isinstance(by, str):
        names = [by]
    elif isinstance(by, Sequence) and all(isinstance(n, str) for n in by):
        names = list(by)
    else:
        raise UserError(
            f"by= takes a column name or a list of them (or None: the sweep's parameters), "
            f"got {by!r}"[:200]
        )
    missing = [n for n in names if n not in frame.columns]
    if missing:
        raise UserError(
            f"No column(s) {missing} to group by; the frame has parameters "
            f"{list(frame.attrs.get('params', []))} (pass by=...)"
        )
    return names


def run_columns(frame: pd.DataFrame) -> list[str]:
    """What identifies one run inside a configuration: the repetition of a sweep, else the run id."""
    if "repeat" in frame.columns and "config" in frame.columns:
        return ["config", "repeat"]
    return ["run_id"]


def grouped(frame: pd.DataFrame, keys: list[str]) -> Any:
    """``groupby`` that keeps the configurations' order and their missing values (k of a baseline)."""
    if not keys:
        frame = frame.assign(_all=0)
        keys = ["_all"]
    return frame.groupby(keys, sort=False, dropna=False)
