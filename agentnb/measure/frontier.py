"""The cost–quality frontier of an experiment's configurations ("AI Agents That Matter", 2024).

A configuration is on the frontier when no other is at least as good on both axes and better
on one: cheaper for the same score, or a better score for the same cost. Means carry their
confidence intervals (`Experiment.summary`) as error bars, so a frontier drawn through
overlapping intervals is read with the caution it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import checks
from ..errors import UserError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from .experiments.stored import Experiment


def frontier(
    experiment: Experiment,
    x: str = "cost",
    y: str = "score",
    *,
    lower_x: bool = True,
    higher_y: bool = True,
) -> pd.DataFrame:
    """One row per configuration: the parameters, ``x``/``y`` means and intervals (columns
    ``<x>_mean``, ``<x>_low``, ...), and ``on_frontier``. By default a lower ``x`` (cost,
    latency) and a higher ``y`` (score) are better."""
    from .experiments.stored import Experiment

    if not isinstance(experiment, Experiment):
        raise checks.fail(
            "pareto(experiment, ...)", "an Experiment (agentnb.open_experiment(name))", experiment
        )
    checks.text(x, "pareto(x)")
    checks.text(y, "pareto(y)")
    checks.flag(lower_x, "frontier(lower_x=...)")
    checks.flag(higher_y, "frontier(higher_y=...)")
    sx, sy = experiment.summary(x), experiment.summary(y)
    params = list(experiment.params)
    table = sx[params].copy()
    for name, s in ((x, sx), (y, sy)):
        table[f"{name}_mean"], table[f"{name}_low"], table[f"{name}_high"] = (
            s["mean"].to_numpy(),
            s["ci_low"].to_numpy(),
            s["ci_high"].to_numpy(),
        )
        table[f"{name}_n"] = s["n"].to_numpy()
    sign_x, sign_y = (1 if lower_x else -1), (1 if higher_y else -1)
    xs = [sign_x * v for v in table[f"{x}_mean"]]  # lower is better
    ys = [sign_y * v for v in table[f"{y}_mean"]]  # higher is better
    table["on_frontier"] = [
        not any(
            (xs[j] <= xs[i] and ys[j] >= ys[i]) and (xs[j] < xs[i] or ys[j] > ys[i])
            for j in range(len(xs))
            if j != i
        )
        and xs[i] == xs[i]  # a NaN mean (no price, no score) is not on it
        and ys[i] == ys[i]
        for i in range(len(xs))
    ]
    return table


def pareto(
    experiment: Experiment,
    x: str = "cost",
    y: str = "score",
    *,
    lower_x: bool = True,
    higher_y: bool = True,
    title: str | None = None,
) -> Figure:
    """``y`` against ``x`` per configuration, with confidence intervals as error bars on both
    axes and the frontier (see `frontier`) drawn through its configurations."""
    from .plot import _figure, _labels, config_labels

    table = frontier(experiment, x, y, lower_x=lower_x, higher_y=higher_y)
    if table.empty:
        raise UserError(f"Experiment {experiment.name!r} has no ended runs to plot yet")
    fig, (ax,) = _figure()
    labels = config_labels(table, list(experiment.params))
    for on, color, marker in ((False, "tab:gray", "o"), (True, "tab:blue", "D")):
        part = table[table["on_frontier"] == on]
        if part.empty:
            continue
        ax.errorbar(
            part[f"{x}_mean"],
            part[f"{y}_mean"],
            xerr=_err(part, x),
            yerr=_err(part, y),
            fmt=marker,
            color=color,
            capsize=3,
            label="on the frontier" if on else "dominated",
        )
    line = table[table["on_frontier"]].sort_values(f"{x}_mean")
    ax.plot(line[f"{x}_mean"], line[f"{y}_mean"], "--", color="tab:blue", linewidth=1)
    for label, xv, yv in zip(labels, table[f"{x}_mean"], table[f"{y}_mean"]):
        ax.annotate(label, (xv, yv), textcoords="offset points", xytext=(6, 6), fontsize=9)
    n = int(table[f"{y}_n"].min()) if len(table) else 0
    _labels(
        ax,
        f"{x} (mean, 95% CI)",
        f"{y} (mean, 95% CI)",
        title or f"{y} against {x} (n ≥ {n} per configuration)",
    )
    ax.legend(fontsize=9)
    return fig


def _err(part: pd.DataFrame, name: str) -> Any:
    import numpy as np

    mean = part[f"{name}_mean"].to_numpy(dtype=float)
    low = np.nan_to_num(mean - part[f"{name}_low"].to_numpy(dtype=float), nan=0.0)
    high = np.nan_to_num(part[f"{name}_high"].to_numpy(dtype=float) - mean, nan=0.0)
    return np.vstack([low, high])
