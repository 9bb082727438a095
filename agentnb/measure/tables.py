"""Cost tables: what each configuration sends, how many times a baseline, and why.

All tables are plain DataFrames with one row per configuration (the sweep's parameters, or
``by=``) and values per run (averaged over the repetitions of a configuration). A baseline
(by default the first configuration) gives the multiplier. The linear fits use every
configuration whose x is a number: give a baseline such as the generalist no ``k`` and it
stays out of the fit, which is then "characters per added sub-agent".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real
from typing import TYPE_CHECKING, Any, Literal

from ..errors import UserError
from ..trace.prefixes import TOKEN_COMPONENTS, Prefix, components
from ..trace.sizes import COMPONENTS
from .frames import calls_frame, group_columns, grouped, run_columns

_CACHING = ("openai", "anthropic")

if TYPE_CHECKING:
    import pandas as pd

    from .prices import Prices

COMPONENT_COLUMNS = tuple(f"chars_in_{c}" for c in COMPONENTS)
"""``chars_in_system`` ... ``chars_in_framing``: they add up to ``chars_in`` (see `agentnb.trace.sizes`)."""

_SUMMED = ("chars_in", *COMPONENT_COLUMNS, "chars_out", "tokens_in", "tokens_out", "latency_s")


def per_run(frame: pd.DataFrame, keys: list[str], extra: Sequence[str] = ()) -> pd.DataFrame:
    """One row per run: call counts and summed sizes. A token total is NaN if any call lacks a count."""
    import pandas as pd

    runs = run_columns(frame)
    work = frame.assign(_call=frame["span_id"].notna())
    numeric = {c: pd.to_numeric(work[c], errors="coerce") for c in (*_SUMMED, *extra) if c in work}
    work = work.assign(**numeric)
    for col in ("tokens_in", "tokens_out", *extra):
        if col in work:
            work[f"_gap_{col}"] = work["_call"] & work[col].isna()
    group = grouped(work, [*keys, *[r for r in runs if r not in keys]])
    sums = group[[c for c in (*_SUMMED, *extra) if c in work] + ["_call"]].sum(min_count=0)
    gaps = group[[c for c in work.columns if c.startswith("_gap_")]].sum()
    for col in gaps.columns:
        sums.loc[gaps[col] > 0, col.removeprefix("_gap_")] = float("nan")
    sums = sums.rename(columns={"_call": "model_calls"})
    firsts = group[[c for c in ("ok", "wall_s", "critical_s") if c in work]].first()
    table: pd.DataFrame = pd.concat([sums, firsts], axis=1).reset_index()
    return table


def _per_config(runs: pd.DataFrame, keys: list[str], values: Sequence[str]) -> pd.DataFrame:
    import pandas as pd

    group = grouped(runs, keys)
    table = group[list(values)].mean()
    for col in values:  # a mean of NaN-free sums stays NaN if any run was NaN
        table.loc[group[col].apply(lambda s: bool(s.isna().any())), col] = float("nan")
    counts = pd.DataFrame({"runs": group.size()})
    if "ok" in runs:
        counts["errors"] = group["ok"].apply(lambda s: int((s == False).sum()))  # noqa: E712
    table = pd.concat([counts, table], axis=1).reset_index()
    for col in values:  # counts of characters and calls read better as integers when they are
        column = table[col]
        if len(column) and column.notna().all() and (column % 1 == 0).all():
            table[col] = column.astype("int64")
    done: pd.DataFrame = table.drop(columns=["_all"], errors="ignore")
    return done


def cost_table(
    data: Any,
    by: str | Sequence[str] | None = None,
    *,
    baseline: Any = None,
    prices: Prices | None = None,
    unit: Literal["chars", "tokens"] = "chars",
    caching: Literal["openai", "anthropic"] | None = None,
) -> pd.DataFrame:
    """Characters and tokens sent and generated per configuration, and the multiplier.

    ``baseline``: ``None`` (the first configuration), a dict of parameter values selecting
    one (``{"mode": "generalist"}``), or a separate run (a result or calls frame), added as
    a first row. ``prices``: a `Prices` table, adding the cost per run (NaN with a
    ``cost_note`` when a price or a token count is missing). ``unit``: what the multiplier
    divides, characters or tokens sent. ``caching``: a provider whose prompt cache
    `agentnb.cache_estimate` estimates (its defaults), adding ``tokens_in_cached_est``,
    ``tokens_in_cache_write_est`` and, with prices, ``cost_cached_est``.

    Columns: the configuration, ``runs``, ``errors``, ``model_calls``, ``chars_in``,
    ``tokens_in``, ``chars_out``, ``tokens_out``, ``multiplier`` (``chars_in`` or
    ``tokens_in`` / the baseline's), ``baseline`` (True on the baseline row), then ``cost``
    (no caching), ``cost_cached_est``, ``cost_cached`` (as the provider reported),
    ``cost_note``, ``price_source``. A configuration column of whole numbers (``k``) is
    ``Int64``, <NA> where a row has none.
    """
    import pandas as pd

    if not isinstance(unit, str) or unit not in ("chars", "tokens"):
        raise UserError(f"unit must be 'chars' or 'tokens', got {unit!r}")
    if caching is not None and (not isinstance(caching, str) or caching not in _CACHING):
        raise UserError(f"caching must be 'openai', 'anthropic' or None, got {caching!r}")
    from .prices import Prices as PriceTable

    if prices is not None and not isinstance(prices, PriceTable):
        raise UserError(
            f"prices must be an agentnb.Prices table (or None), got {type(prices).__name__}: "
            "agentnb.Prices() has the default prices, Prices({...}, source=..., as_of=...) yours"
        )
    if isinstance(baseline, Mapping) and not baseline:
        raise UserError(
            "baseline= takes None (the first configuration), a dict of parameter values that "
            "selects one ({'mode': 'generalist'}), or a result or calls frame; got {}"
        )
    frame = calls_frame(data)
    if frame.empty or "span_id" not in frame.columns:
        raise UserError(
            f"cost_table needs rows of model calls; got a frame of {len(frame)} rows and "
            f"{len(frame.columns)} columns: pass results, a sweep's frame or result.calls"
        )
    keys = group_columns(frame, by)
    extra: tuple[str, ...] = ()
    if caching is not None:
        from .caching import cache_estimate

        frame = cache_estimate(frame, caching)
        extra = ("tokens_in_cached_est", "tokens_in_cache_write_est")
    if prices is not None:
        from .prices import add_cost

        frame = add_cost(frame, prices)
        extra += ("cost",)
        if caching is not None:
            extra += ("cost_cached_est",)
        if _reported(frame):
            extra += ("cost_cached",)
    values = ["model_calls", "chars_in", "tokens_in", "chars_out", "tokens_out", *extra]
    table = _per_config(per_run(frame, keys, extra), keys, values)
    if prices is not None:
        notes = grouped(frame, keys)[["cost_note", "price_source"]].agg(_first_text)
        for col in ("cost_note", "price_source"):  # None, not NaN, where there is nothing to say
            texts = [v if isinstance(v, str) else None for v in notes[col]]
            table[col] = pd.Series(texts, index=table.index, dtype=object)
    table["baseline"] = False
    if baseline is None or isinstance(baseline, Mapping):
        base_row = _select(table, keys, baseline)
        table.loc[base_row, "baseline"] = True
        base = float(table.loc[base_row, f"{unit}_in"])
    else:
        base_calls = calls_frame(baseline)
        base_table = cost_table(base_calls, by=[], prices=prices, caching=caching)
        base_table = base_table.assign(**{k: None for k in keys}, baseline=True)
        table = pd.concat([base_table.reindex(columns=table.columns), table], ignore_index=True)
        base = float(base_table[f"{unit}_in"].iloc[0])
    multiplier = table[f"{unit}_in"] / base
    table.insert(list(table.columns).index("baseline"), "multiplier", multiplier)
    for key in keys:
        table[key] = _whole_numbers(table[key])
    table.attrs["params"] = keys
    return table


def _reported(frame: pd.DataFrame) -> bool:
    """Whether a provider reported cached or cache-write tokens for any call of ``frame``."""
    columns = [c for c in ("tokens_in_cached", "tokens_in_cache_write") if c in frame]
    return bool(columns) and bool(frame[columns].notna().to_numpy().any())


def _whole_numbers(column: pd.Series) -> pd.Series:
    """A configuration column of whole numbers as pandas' nullable ``Int64`` (1, 2, <NA>).

    A sweep whose baseline has no ``k`` makes ``k`` float (1.0, NaN), and a separate baseline
    row makes it object; both read as counts again, without an ``.astype`` in the notebook.
    """
    import pandas as pd

    present = column.dropna()
    if not len(present) or pd.api.types.is_integer_dtype(column) or column.dtype == bool:
        return column
    if all(
        isinstance(v, Real) and not pd.api.types.is_bool(v) and float(v).is_integer()
        for v in present
    ):
        return column.astype("Int64")
    return column


def _first_text(values: pd.Series) -> Any:
    present = values.dropna()
    return present.iloc[0] if len(present) else None


def _select(table: pd.DataFrame, keys: list[str], where: Mapping[str, Any] | None) -> Any:
    if where is None:
        return table.index[0]
    unknown = [k for k in where if k not in keys]
    if unknown:
        raise UserError(f"baseline names {unknown}, which are not configuration columns {keys}")
    mask = True
    for key, value in where.items():
        mask = mask & (table[key] == value)
    hits = table.index[mask]
    if len(hits) != 1:
        raise UserError(
            f"baseline {dict(where)} matches {len(hits)} configurations; it must select exactly one"
        )
    return hits[0]


def linear_fit(
    table: pd.DataFrame, x: str, ys: Sequence[str], by: Sequence[str] | None = None
) -> pd.DataFrame:
    """Least-squares lines ``y = slope * x + intercept`` over the rows whose ``x`` is a number.

    One row per group of ``by`` and per y: the group, ``y``, ``slope``, ``intercept``,
    ``r2`` and ``points``. Fewer than two distinct x values give NaN slopes.
    """
    import numpy as np
    import pandas as pd

    if x not in table.columns:
        raise UserError(f"No column {x!r} to fit against; columns: {list(table.columns)}")
    rows = table.assign(_x=pd.to_numeric(table[x], errors="coerce"))
    rows = rows[rows["_x"].notna()]
    keys = [k for k in (by or []) if k != x]
    out: list[dict[str, Any]] = []
    groups = grouped(rows, keys) if len(rows) else []
    for name, part in groups:
        label = dict(zip(keys, name if isinstance(name, tuple) else (name,)))
        xs = part["_x"].to_numpy(dtype=float)
        for y in ys:
            vs = pd.to_numeric(part[y], errors="coerce").to_numpy(dtype=float)
            slope = intercept = r2 = float("nan")
            if len(set(xs)) >= 2 and not np.isnan(vs).any():
                # closed form rather than polyfit: exact on the integer data of scripted runs
                dx = xs - xs.mean()
                slope = float((dx * (vs - vs.mean())).sum() / (dx**2).sum())
                intercept = float(vs.mean() - slope * xs.mean())
                residual = vs - (slope * xs + intercept)
                spread = float(((vs - vs.mean()) ** 2).sum())
                r2 = 1.0 - float((residual**2).sum()) / spread if spread else 1.0
            out.append(
                {
                    **label,
                    "x": x,
                    "y": y,
                    "slope": slope,
                    "intercept": intercept,
                    "r2": r2,
                    "points": len(xs),
                }
            )
    return pd.DataFrame(out, columns=[*keys, "x", "y", "slope", "intercept", "r2", "points"])


def cost_fit(
    table: pd.DataFrame, x: str = "k", y: str = "chars_in", by: Sequence[str] | None = None
) -> pd.DataFrame:
    """The per-sub-agent increment of a `cost_table`: slope and intercept of ``y`` against ``x``,
    one line per group of the other configuration columns (e.g. per ``mode``)."""
    keys = list(by) if by is not None else [k for k in table.attrs.get("params", []) if k != x]
    return linear_fit(table, x, [y], keys)


def breakdown(
    data: Any,
    by: str | Sequence[str] | None = None,
    *,
    depth: bool = False,
    unit: Literal["chars", "tokens"] = "chars",
) -> pd.DataFrame:
    """Why it costs that much: characters sent per component, per configuration (per run).

    The ``chars_in_<component>`` columns add up to ``chars_in``: the system prompts, the
    tool specs resent on every turn, user input (a sub-agent's input included), earlier
    assistant text, tool-call arguments reread, tool results reread, and JSON framing.
    ``chars_out`` is what the models generated (the orchestrator's tool arguments included).
    ``depth=True`` splits each configuration by depth (0: the orchestrator, 1: its sub-agents).
    ``unit="tokens"``: the same in tokens (``tokens_in_<component>``, no framing), from the
    fingerprints each call keeps (NaN for calls counted without a tokenizer).
    """
    frame = calls_frame(data)
    keys = group_columns(frame, by)
    split = [*keys, "depth"] if depth else keys
    if depth:
        frame = frame[frame["span_id"].notna()]
    columns = _components(unit)
    if unit == "tokens":
        frame = with_token_components(frame)
    runs = per_run(frame, split, columns if unit == "tokens" else ())
    values = ["model_calls", *columns, f"{unit}_in", f"{unit}_out"]
    table = _per_config(runs, split, values)
    if depth:
        table = table.drop(columns=["errors"], errors="ignore")
    table.attrs["params"] = keys
    return table


def breakdown_growth(
    data: Any,
    x: str = "k",
    by: str | Sequence[str] | None = None,
    *,
    depth: bool = False,
    unit: Literal["chars", "tokens"] = "chars",
) -> pd.DataFrame:
    """How much each component grows per unit of ``x`` (per added sub-agent), and its share.

    One row per component (``chars_in_user`` ...), then ``chars_in`` (the total) and
    ``chars_out``; ``share`` is the component's part of the growth of ``chars_in``. Grouped
    by the other configuration columns (e.g. ``mode``) and, with ``depth=True``, by depth.
    ``unit="tokens"``: the same in tokens (see `breakdown`).
    """
    table = breakdown(data, by, depth=depth, unit=unit)
    keys = [k for k in table.attrs["params"] if k != x] + (["depth"] if depth else [])
    total, out = f"{unit}_in", f"{unit}_out"
    ys = [*_components(unit), total, out]
    fits = linear_fit(table, x, ys, keys).rename(columns={"y": "component"})
    totals = fits[fits["component"] == total].set_index(keys or "x")["slope"]
    index = fits.set_index(keys or "x").index
    share = fits["slope"].to_numpy() / totals.reindex(index).to_numpy()
    fits["share"] = share
    fits.loc[fits["component"].isin([total, out]), "share"] = float("nan")
    return fits.drop(columns=["x", "r2", "points"])


TOKEN_COMPONENT_COLUMNS = tuple(f"tokens_in_{c}" for c in TOKEN_COMPONENTS)
"""``tokens_in_system`` ... ``tokens_in_tool_results``: they add up to ``tokens_in``."""


def _components(unit: str) -> tuple[str, ...]:
    if unit not in ("chars", "tokens"):
        raise UserError(f"unit must be 'chars' or 'tokens', got {unit!r}")
    return TOKEN_COMPONENT_COLUMNS if unit == "tokens" else COMPONENT_COLUMNS


def with_token_components(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of a calls frame with ``tokens_in_<component>`` from each call's ``prefix``."""
    import pandas as pd

    chains = frame["prefix"] if "prefix" in frame else pd.Series(None, index=frame.index)
    parts = [components(c) if isinstance(c, Prefix) else {} for c in chains]
    split = pd.DataFrame.from_records(parts, index=frame.index, columns=list(TOKEN_COMPONENTS))
    return frame.assign(**{f"tokens_in_{c}": split[c].astype(float) for c in TOKEN_COMPONENTS})


def latency_series(data: Any, x: str = "n", mode: str | None = "mode") -> pd.DataFrame:
    """Wall time against ``x`` (e.g. the number of branches), per ``mode`` (parallel, serial).

    Needs a `sweep` frame (it records ``wall_s`` and ``critical_s`` per run). Columns: the
    mode and x, ``runs``, ``model_calls``, ``wall_s``, ``critical_s`` (the critical-path lower
    bound: no orchestration of the same calls can be faster), ``latency_sum_s`` (every model
    call one after another), ``overhead_s`` (wall time above the bound) and ``ttft_s`` (the
    mean time to the first token of a call, for streamed runs; NaN otherwise).
    """
    import pandas as pd

    frame = calls_frame(data)
    if "wall_s" not in frame.columns:
        raise UserError(
            "latency_series needs a sweep frame with wall_s per run: "
            "agentnb.sweep(fn, {'n': [1, 2, 4], 'mode': ['parallel', 'serial']})"
        )
    keys = [k for k in (mode, x) if k is not None]
    group_columns(frame, keys)
    runs = per_run(frame, keys)
    values = ["model_calls", "wall_s", "critical_s", "latency_s"]
    table = _per_config(runs, keys, values).rename(columns={"latency_s": "latency_sum_s"})
    table["overhead_s"] = table["wall_s"] - table["critical_s"]
    if "ttft_s" in frame:
        ttft = pd.to_numeric(frame["ttft_s"], errors="coerce")
        means = grouped(frame.assign(ttft_s=ttft), keys)["ttft_s"].mean()
        table["ttft_s"] = means.to_numpy() if keys else float(means.iloc[0])
    else:
        table["ttft_s"] = float("nan")
    table.attrs["params"] = keys
    return table
