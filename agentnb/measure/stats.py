"""Confidence intervals that hold with few samples, taken from scipy.stats, and paired comparisons.

`interval` chooses, when ``method="auto"``, by what the values are:

- pass/fail values (bools): the Wilson score interval (``binomtest(...).proportion_ci``),
  which stays inside [0, 1] and is not degenerate at 0 or 20 passes out of 20;
- skewed values (10 or more, sample skewness beyond ±1: costs, latencies with a long tail):
  a bootstrap interval of the mean (BCa, 9,999 resamples, a fixed seed so tables reproduce);
- anything else: Student's t interval of the mean.

Every table names the method it used. With one value there is no interval (NaN), not a guess.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import checks
from ..errors import UserError

if TYPE_CHECKING:
    import pandas as pd

METHODS = ("auto", "t", "wilson", "bootstrap")
SKEWED = 1.0
"""Sample skewness beyond which ``auto`` bootstraps (with at least `SKEWED_MIN_N` values)."""
SKEWED_MIN_N = 10
RESAMPLES = 9_999
SEED = 20241
"""The bootstrap's seed: the same data give the same interval."""


@dataclass(frozen=True, slots=True)
class Interval:
    n: int
    mean: float
    low: float
    high: float
    method: str


def interval(
    values: Sequence[Any] | Any,
    *,
    method: str = "auto",
    confidence: float = 0.95,
    binary: bool | None = None,
) -> Interval:
    """The mean of ``values`` (NaN and None left out) with its confidence interval.

    ``binary``: the values are pass/fail (default: they are all bools)."""
    import numpy as np

    checks.one_of(method, "interval(method=...)", METHODS)
    check_confidence(confidence, "interval(confidence=...)")
    raw = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if binary is None:
        binary = bool(raw) and all(isinstance(v, (bool, np.bool_)) for v in raw)
    data = np.asarray(raw, dtype=float)
    n = len(data)
    if method == "auto":
        method = "wilson" if binary else ("bootstrap" if _skewed(data) else "t")
    if n == 0:
        return Interval(0, math.nan, math.nan, math.nan, method)
    mean = float(data.mean())
    if method == "wilson":
        return _wilson(data, confidence)
    if n < 2:
        return Interval(n, mean, math.nan, math.nan, method)
    if float(data.max()) == float(data.min()):  # no spread: the interval is the point
        return Interval(n, mean, mean, mean, method)
    if method == "bootstrap":
        return _bootstrap(data, confidence)
    from scipy import stats

    low, high = stats.t.interval(confidence, n - 1, loc=mean, scale=stats.sem(data))
    return Interval(n, mean, float(low), float(high), "t")


def check_confidence(value: object, where: str) -> None:
    """A confidence level is a number strictly between 0 and 1; else `UserError`."""
    checks.number(value, where)
    if not 0 < value < 1:  # type: ignore[operator]
        raise checks.fail(where, "a number between 0 and 1, e.g. 0.95", value)


TEXT_COLUMNS = frozenset(
    {"error", "score_error", "score_type", "timing", "tokens_method", "stop_reason", "status"}
)
"""Columns of runs and calls that hold text: refused as a metric even when every value is
empty (the runs that ended ok have no ``error``)."""


def check_metric(runs: pd.DataFrame, metric: object, where: str) -> None:
    """``metric`` names a column of the runs; else `UserError` listing them."""
    checks.text(metric, where)
    if metric not in runs.columns:
        raise UserError(
            f"No column {metric!r} in the runs; choose one of {sorted(map(str, runs.columns))}"
        )
    values = runs[metric].dropna()
    numeric = [v for v in values.tolist() if isinstance(v, (int, float)) or hasattr(v, "dtype")]
    if len(numeric) < len(values) or metric in TEXT_COLUMNS:  # text even where none is set
        raise UserError(
            f"{where}: the column {metric!r} holds text, not numbers; choose a numeric column "
            "(score, cost, wall_s, calls, tokens_in, ...)"
        )


def check_groups(runs: pd.DataFrame, by: object, where: str) -> list[str]:
    """``by`` names columns of the runs; else `UserError` listing them."""
    if isinstance(by, str) or not isinstance(by, (list, tuple)):
        raise checks.fail(where, "a list of column names", by)
    unknown = [b for b in by if b not in runs.columns]
    if unknown:
        raise UserError(
            f"{where}: no column {unknown[0]!r} in the runs; choose among "
            f"{sorted(map(str, runs.columns))}"
        )
    return list(by)


def _skewed(data: Any) -> bool:
    if len(data) < SKEWED_MIN_N or float(data.max()) == float(data.min()):
        return False
    from scipy import stats

    return bool(abs(float(stats.skew(data))) > SKEWED)


def _wilson(data: Any, confidence: float) -> Interval:
    from scipy import stats

    if not set(data.tolist()) <= {0.0, 1.0}:
        raise UserError(
            "The Wilson interval is for pass/fail values (bools, 0 and 1); use method='t' or "
            "'bootstrap' for numbers."
        )
    k, n = int(data.sum()), len(data)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(n, k / n, float(ci.low), float(ci.high), "wilson")


def _bootstrap(data: Any, confidence: float) -> Interval:
    import numpy as np
    from scipy import stats

    mean = float(data.mean())
    for kind in ("BCa", "percentile"):  # BCa can fail on odd samples (warnings): fall back
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                result = stats.bootstrap(
                    (data,),
                    np.mean,
                    confidence_level=confidence,
                    n_resamples=RESAMPLES,
                    method=kind,
                    random_state=np.random.default_rng(SEED),
                )
            except (Warning, ValueError):
                continue
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
        if not (math.isnan(low) or math.isnan(high)):
            return Interval(len(data), mean, low, high, "bootstrap")
    return Interval(len(data), mean, math.nan, math.nan, "bootstrap")


def summarize(
    runs: pd.DataFrame,
    metric: str,
    by: Sequence[str],
    *,
    method: str = "auto",
    confidence: float = 0.95,
    binary: bool | None = None,
) -> pd.DataFrame:
    """One row per group of ``by``: ``n``, ``mean``, ``ci_low``, ``ci_high`` and ``method``."""
    import pandas as pd

    check_metric(runs, metric, "summary(metric)")
    by = check_groups(runs, by, "summary(by=...)")
    checks.one_of(method, "summary(method=...)", METHODS)
    check_confidence(confidence, "summary(confidence=...)")
    records = []
    groups = runs.groupby(list(by), sort=False, dropna=False) if by else [((), runs)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        found = interval(
            _values(group[metric]), method=method, confidence=confidence, binary=binary
        )
        records.append(
            {
                **dict(zip(by, key)),
                "n": found.n,
                "mean": found.mean,
                "ci_low": found.low,
                "ci_high": found.high,
                "method": found.method,
            }
        )
    table = pd.DataFrame.from_records(
        records, columns=[*by, "n", "mean", "ci_low", "ci_high", "method"]
    )
    table.attrs["metric"] = metric
    table.attrs["confidence"] = confidence
    return table


def _values(column: pd.Series) -> list[Any]:
    if column.dtype == bool:
        return [bool(v) for v in column]
    return [None if v is None else float(v) for v in column]


def paired(
    runs: pd.DataFrame,
    params: Sequence[str],
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    metric: str,
    *,
    method: str = "auto",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """``a`` against ``b`` (dicts of parameters) on ``metric``, paired by the parameters
    neither names, the trial and the item: one row with ``n`` pairs, ``diff`` (mean of
    a − b), its interval, the method, ``includes_zero`` and (t method) the paired t-test's
    ``p_value``."""
    import numpy as np
    import pandas as pd

    checks.one_of(method, "compare(method=...)", ("auto", "t", "bootstrap"))
    check_confidence(confidence, "compare(confidence=...)")
    for label, side in (("a", a), ("b", b)):
        if not isinstance(side, Mapping) or not side:
            raise checks.fail(
                f"compare({label})", "a dict of parameters, e.g. {'shape': 'flat'}", side
            )
        unknown = sorted(set(side) - set(params))
        if unknown:
            raise UserError(
                f"compare({label}) names {unknown}, not parameters of the experiment {list(params)}"
            )
    check_metric(runs, metric, "compare(metric)")
    keys = [p for p in params if p not in a and p not in b] + ["trial", "item"]
    sides = []
    for side in (a, b):
        chosen = runs
        for name, value in side.items():
            chosen = chosen[chosen[name] == value]
        if chosen.empty:
            raise UserError(
                f"No runs that ended ok with {dict(side)!r}; the grid's values and each run's error are in experiment.runs"
            )
        part = chosen[[*keys, metric]].copy()
        part[metric] = [np.nan if v is None else float(v) for v in part[metric]]
        part["item"] = part["item"].fillna(-1)
        sides.append(part)
    both = sides[0].merge(sides[1], on=keys, suffixes=("_a", "_b")).dropna()
    diffs = (both[f"{metric}_a"] - both[f"{metric}_b"]).to_numpy(dtype=float)
    if method == "auto":
        method = "bootstrap" if _skewed(diffs) else "t"
    found = interval(list(diffs), method=method, confidence=confidence, binary=False)
    p_value = math.nan
    if found.method == "t" and found.n >= 2 and float(np.ptp(diffs)) > 0:
        from scipy import stats

        p_value = float(stats.ttest_1samp(diffs, 0.0).pvalue)
    includes = bool(found.low <= 0 <= found.high) if not math.isnan(found.low) else True
    row = {
        "a": _label(a),
        "b": _label(b),
        "metric": metric,
        "n": found.n,
        "mean_a": float(both[f"{metric}_a"].mean()) if found.n else math.nan,
        "mean_b": float(both[f"{metric}_b"].mean()) if found.n else math.nan,
        "diff": found.mean,
        "ci_low": found.low,
        "ci_high": found.high,
        "method": found.method,
        "includes_zero": includes,
        "p_value": p_value,
    }
    table = pd.DataFrame([row])
    table.attrs["confidence"] = confidence
    table.attrs["paired_by"] = keys
    return table


def _label(side: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in side.items())
