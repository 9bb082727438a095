"""Intervals, paired comparisons and the frontier, checked against scipy and hand computation."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats as sps

import agentnb as a
from agentnb.errors import UserError
from agentnb.measure.frontier import frontier
from agentnb.measure.stats import interval


def test_the_t_interval_is_the_textbook_one():
    values = [3.0, 5.0, 4.0, 6.0, 5.5]
    n, mean = len(values), sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = sps.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    found = interval(values)
    assert found.method == "t" and found.n == 5
    assert (found.low, found.high) == pytest.approx((mean - half, mean + half))


def test_pass_fail_values_get_the_wilson_interval():
    values = [True] * 17 + [False] * 3
    n, p, z = 20, 17 / 20, sps.norm.ppf(0.975)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    found = interval(values)
    assert found.method == "wilson" and found.mean == 0.85
    assert (found.low, found.high) == pytest.approx((centre - half, centre + half))
    every = interval([True] * 20)  # not degenerate at 20 of 20
    assert every.high == 1.0 and every.low < 0.9


def test_skewed_values_are_bootstrapped_reproducibly():
    rng = random.Random(7)
    costs = [rng.lognormvariate(0, 1.2) for _ in range(40)]
    assert abs(sps.skew(costs)) > 1
    found = interval(costs)
    assert found.method == "bootstrap"
    assert found.low < found.mean < found.high
    assert interval(costs) == found  # a fixed seed: the same table every time
    forced = interval(costs, method="t")
    assert forced.method == "t" and forced.low != found.low


def test_too_few_values_give_no_interval_rather_than_a_guess():
    assert math.isnan(interval([2.0]).low) and interval([2.0]).mean == 2.0
    assert interval([]).n == 0 and math.isnan(interval([]).mean)
    assert interval([None, float("nan"), 4.0, 4.0]).low == 4.0  # no spread, missing left out
    with pytest.raises(UserError, match="Wilson interval is for pass/fail"):
        interval([0.5, 2.0], method="wilson")


SCORES = {  # (shape, llm) -> a score per trial
    ("flat", "m1"): [0.50, 0.60, 0.55, 0.70, 0.65, 0.40],
    ("tree", "m1"): [0.62, 0.71, 0.60, 0.83, 0.70, 0.55],
    ("flat", "m2"): [0.30, 0.35, 0.20, 0.40, 0.30, 0.25],
    ("tree", "m2"): [0.31, 0.30, 0.28, 0.37, 0.33, 0.20],
}


async def quiet(shape: str, llm: str, trial: int) -> a.RunResult:
    reply = "x" * (10 if shape == "flat" else 40) * (1 if llm == "m1" else 2)
    return await a.run(a.Agent("solo", "Answer.", a.ScriptedModel([a.say(reply)])), "q")


def table_score(run: a.RunResult, shape: str, llm: str, trial: int) -> float:
    return SCORES[shape, llm][trial]


@pytest.fixture
async def scored(tmp_path):
    grid = {"shape": ["flat", "tree"], "llm": ["m1", "m2"]}
    return await a.experiment(
        "s", quiet, grid, trials=6, score=table_score, store=tmp_path / "x.db", progress=False
    )


async def test_summary_gives_each_configuration_its_interval(scored):
    summary = scored.summary("score")
    row = summary[(summary["shape"] == "tree") & (summary["llm"] == "m1")].iloc[0]
    expected = interval(SCORES["tree", "m1"])
    assert (row["n"], row["mean"], row["ci_low"], row["ci_high"], row["method"]) == (
        6,
        pytest.approx(expected.mean),
        pytest.approx(expected.low),
        pytest.approx(expected.high),
        "t",
    )
    by_shape = scored.summary("score", by=["shape"])
    assert list(by_shape["n"]) == [12, 12]
    with pytest.raises(UserError, match="No column 'quality'"):
        scored.summary("quality")


async def test_compare_pairs_by_trial_and_the_parameters_neither_side_names(scored):
    table = a.compare(scored, {"shape": "tree"}, {"shape": "flat"}, "score")
    a_side = SCORES["tree", "m1"] + SCORES["tree", "m2"]
    b_side = SCORES["flat", "m1"] + SCORES["flat", "m2"]
    paired = sps.ttest_rel(a_side, b_side)
    ci = paired.confidence_interval()
    row = table.iloc[0]
    assert row["n"] == 12 and row["method"] == "t"
    assert row["diff"] == pytest.approx(sum(a_side) / 12 - sum(b_side) / 12)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((ci.low, ci.high))
    assert row["p_value"] == pytest.approx(paired.pvalue)
    assert table.attrs["paired_by"] == ["llm", "trial", "item"]
    assert not row["includes_zero"]
    # unpaired, the same data could not tell them apart: the pairing is what decides
    assert sps.ttest_ind(a_side, b_side).pvalue > 0.05 > paired.pvalue

    m2 = a.compare(scored, {"shape": "tree", "llm": "m2"}, {"shape": "flat", "llm": "m2"})
    assert m2["n"].item() == 6 and m2["includes_zero"].item()
    with pytest.raises(UserError, match="not parameters of the experiment"):
        a.compare(scored, {"size": 1}, {"shape": "flat"}, "score")
    with pytest.raises(UserError, match="No runs that ended ok with"):
        a.compare(scored, {"shape": "huge"}, {"shape": "flat"}, "score")


async def test_the_frontier_keeps_the_configurations_nothing_beats(scored):
    table = frontier(scored, "chars_out", "score")
    on = {(r.shape, r.llm) for r in table.itertuples() if r.on_frontier}
    # chars_out: flat m1 10, tree m1 40, flat m2 20, tree m2 80; scores fall with m2
    assert on == {("flat", "m1"), ("tree", "m1")}
    fig = a.pareto(scored, "chars_out", "score")
    ax = fig.axes[0]
    assert len(ax.containers) == 2  # error bars: on the frontier and dominated
    line = ax.get_lines()[-1]
    assert list(line.get_xdata()) == [10.0, 40.0]  # the frontier drawn through its points
    assert {t.get_text() for t in ax.texts} == {"flat m1", "tree m1", "flat m2", "tree m2"}


def test_the_live_view_redraws_intervals_that_narrow_as_trials_end(monkeypatch):
    from agentnb.measure.experiments import live as live_module

    monkeypatch.setattr(live_module, "EVERY_S", 0.0)  # redraw after every run
    drawn = []
    view = live_module.LiveSummary(["shape"], "score", drawn.append)
    rng = random.Random(3)
    for _ in range(30):
        view.add({"shape": "panel"}, rng.random() < 0.7)
    widths = [f["ci_high"].item() - f["ci_low"].item() for f in drawn[2:]]
    assert (
        len(drawn) == 30 and drawn[-1]["n"].item() == 30 and drawn[-1]["method"].item() == "wilson"
    )
    assert widths[-1] < 0.6 * widths[0]  # 30 trials against 3
    view.add({"shape": "solo"}, None)  # a failed score: the configuration shows, with no value
    assert list(drawn[-1]["n"]) == [30, 0]
