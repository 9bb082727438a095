"""Cost, breakdown, latency and verifier tables on scripted runs: exact numbers, they are deterministic."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import agentnb as a
from agentnb.measure.critical import critical_path, span_critical
from agentnb.measure.rounds import verifier_table
from agentnb.measure.sweeps import sweep
from agentnb.measure.tables import (
    COMPONENT_COLUMNS,
    breakdown,
    breakdown_growth,
    cost_fit,
    cost_table,
    latency_series,
)
from agentnb.trace import Span, canonical_request

CLAUSE = 'The supplier guarantees "100%" availability of the service. ' * 4
OPINION = "needs_changes: a 100% guarantee is an obligation of result."


def escaped(text: str) -> int:
    """Characters of a text inside a JSON string (quotes and backslashes escaped)."""
    return len(json.dumps(text, ensure_ascii=False)) - 2


class Scenario:
    """The article's cost trial in miniature: a generalist, or a coordinator and k reviewers."""

    def __init__(self) -> None:
        self.models: dict[tuple, list[a.ScriptedModel]] = {}

    async def __call__(self, setup: str, k: int | None = None) -> a.RunResult:
        if setup == "generalist":
            model = a.ScriptedModel([a.say("Synthesis.")])
            self.models[(setup, k)] = [model]
            return await a.run(a.Agent("generalist", "Assess.", model), CLAUSE)
        reviewers = [a.ScriptedModel([a.say(OPINION)]) for _ in range(k or 0)]
        plan = [a.tool_call(f"r{i}", input=CLAUSE) for i in range(k or 0)]
        coordinator = a.ScriptedModel([plan, a.say("Synthesis.")])
        self.models[(setup, k)] = [coordinator, *reviewers]
        agents = [a.Agent(f"r{i}", "Review.", m) for i, m in enumerate(reviewers)]
        return await a.run(a.Agent("coordinator", "Consult all.", coordinator, agents), CLAUSE)

    def sent(self, setup: str, k: int | None = None) -> int:
        """Characters sent, computed from what the models received (not from the trace)."""
        return sum(len(canonical_request(r)) for m in self.models[(setup, k)] for r in m.requests)


GRID = [{"setup": "generalist"}, *({"setup": "hierarchy", "k": k} for k in (1, 2, 3, 5))]


@pytest.fixture
async def trial():
    scenario = Scenario()
    frame = await sweep(scenario, GRID, progress=False)
    return scenario, frame


async def test_cost_table_has_characters_multiplier_and_baseline(trial):
    scenario, frame = trial
    table = cost_table(frame)

    assert list(table.columns) == [
        "setup",
        "k",
        "runs",
        "errors",
        "model_calls",
        "chars_in",
        "tokens_in",
        "chars_out",
        "tokens_out",
        "multiplier",
        "baseline",
    ]
    assert table["setup"].tolist() == ["generalist", *["hierarchy"] * 4]
    # the generalist has no k: whole numbers with a gap, not floats with a NaN
    assert str(table["k"].dtype) == "Int64" and table["k"].tolist() == [pd.NA, 1, 2, 3, 5]
    assert table["model_calls"].tolist() == [1, 3, 4, 5, 7]
    expected = [scenario.sent("generalist"), *(scenario.sent("hierarchy", k) for k in (1, 2, 3, 5))]
    assert table["chars_in"].tolist() == expected
    # the generalist reads the clause once: system "Assess.", the clause, and the JSON around them
    assert expected[0] == len(
        '{"system":"Assess.","messages":[{"role":"user","content":""}],"tools":[]}'
    ) + escaped(CLAUSE)
    assert table["multiplier"].tolist() == [c / expected[0] for c in expected]
    assert table["baseline"].tolist() == [True, False, False, False, False]
    assert table["tokens_in"].isna().all()  # no tokenizer in tests: never a made-up count
    assert table["chars_out"].tolist()[0] == len("Synthesis.")


async def test_the_fit_gives_the_characters_per_added_sub_agent(trial):
    scenario, frame = trial
    fit = cost_fit(cost_table(frame))

    totals = {k: scenario.sent("hierarchy", k) for k in (1, 2, 3, 5)}
    step = totals[2] - totals[1]
    assert totals[3] - totals[2] == step and totals[5] - totals[3] == 2 * step  # exactly linear
    assert fit[["setup", "x", "y", "points"]].values.tolist() == [["hierarchy", "k", "chars_in", 4]]
    assert fit["slope"].iloc[0] == step
    assert fit["intercept"].iloc[0] == totals[1] - step
    assert fit["r2"].iloc[0] == 1.0


async def test_a_baseline_can_be_selected_or_given_as_a_separate_run(trial):
    scenario, frame = trial
    hierarchy = frame[frame["setup"] == "hierarchy"]

    chosen = cost_table(hierarchy, by="k", baseline={"k": 2})
    assert chosen["multiplier"].tolist()[1] == 1.0 and chosen["baseline"].tolist()[1]

    generalist = await Scenario()("generalist")
    separate = cost_table(hierarchy, by="k", baseline=generalist)
    assert separate["k"].isna().tolist() == [True, False, False, False, False]
    assert str(separate["k"].dtype) == "Int64"
    assert str(chosen["k"].dtype) == "Int64"  # whole numbers, though the frame had them as floats
    assert separate["chars_in"].tolist()[0] == scenario.sent("generalist")
    assert separate["multiplier"].tolist() == cost_table(frame)["multiplier"].tolist()

    with pytest.raises(a.UserError, match="matches 0 configurations"):
        cost_table(hierarchy, by="k", baseline={"k": 4})
    with pytest.raises(a.UserError, match="not configuration columns"):
        cost_table(hierarchy, by="k", baseline={"setup": "generalist"})


async def test_repetitions_are_averaged_per_run():
    frame = await sweep(Scenario(), [{"setup": "hierarchy", "k": 2}], repeat=3, progress=False)
    table = cost_table(frame)
    assert table[["runs", "errors", "model_calls"]].values.tolist() == [[3, 0, 4]]
    assert table["chars_in"].iloc[0] == frame["chars_in"].sum() / 3


async def test_a_dict_of_results_is_a_table_too():
    scenario = Scenario()
    runs = {"generalist": await scenario("generalist"), "k=2": await scenario("hierarchy", 2)}
    table = cost_table(runs)
    assert table["configuration"].tolist() == ["generalist", "k=2"]
    assert table["chars_in"].tolist() == [
        scenario.sent("generalist"),
        scenario.sent("hierarchy", 2),
    ]


async def test_breakdown_components_add_up_and_explain_the_growth(trial):
    _, frame = trial
    table = breakdown(frame)

    assert table[list(COMPONENT_COLUMNS)].sum(axis=1).tolist() == table["chars_in"].tolist()
    assert table["chars_in"].tolist() == cost_table(frame)["chars_in"].tolist()

    growth = breakdown_growth(frame).set_index("component")
    argument = json.dumps({"input": CLAUSE}, ensure_ascii=False, separators=(",", ":"))
    # per added reviewer: the reviewer reads the clause as its input ...
    assert growth.loc["chars_in_user", "slope"] == escaped(CLAUSE)
    # ... the coordinator rereads the argument it wrote (with the clause escaped twice) ...
    assert growth.loc["chars_in_tool_args", "slope"] == escaped(argument)
    # ... and the opinion, and the reviewer's tool spec is resent on both coordinator turns
    assert growth.loc["chars_in_tool_results", "slope"] == escaped(OPINION)
    spec = a.Agent("r0", "Review.").as_tool().spec.as_dict()
    assert growth.loc["chars_in_tools", "slope"] == 2 * len(
        json.dumps(spec, ensure_ascii=False, separators=(",", ":"))
    )
    assert growth.loc["chars_in_assistant", "slope"] == 0
    # the coordinator generates the argument once per reviewer, the reviewer its opinion
    assert growth.loc["chars_out", "slope"] == len(argument) + len(OPINION)
    parts = growth.loc[list(COMPONENT_COLUMNS), "slope"]
    assert parts.sum() == growth.loc["chars_in", "slope"]
    assert growth.loc[list(COMPONENT_COLUMNS), "share"].sum() == pytest.approx(1.0)


async def test_breakdown_by_depth_splits_orchestrator_and_sub_agents(trial):
    _, frame = trial
    table = breakdown(frame, depth=True)
    three = table[table["k"] == 3].set_index("depth")
    assert three["model_calls"].to_dict() == {0: 2, 1: 3}
    assert three.loc[1, "chars_in_user"] == 3 * escaped(CLAUSE)
    assert three.loc[1, "chars_in_tool_args"] == 0

    growth = breakdown_growth(frame, depth=True)
    sub = growth[(growth["depth"] == 1) & (growth["component"] == "chars_in_user")]
    assert sub["slope"].tolist() == [escaped(CLAUSE)]


def _span(sid, parent, kind, start, end, turn=None):
    attrs = {} if turn is None else {"turn": turn}
    return Span(sid, parent, kind, kind, "agent", "p", 0, start, end, "ok", attrs)


def test_critical_path_takes_the_slowest_tool_of_a_turn_and_sums_turns():
    spans = [
        _span("run", None, "run", 0.0, 4.0),
        _span("ag", "run", "agent", 0.0, 4.0),
        _span("m1", "ag", "model_call", 0.0, 0.5, turn=1),
        _span("t1", "ag", "tool_call", 0.5, 2.5, turn=1),  # a sub-agent taking 1.5 s of model time
        _span("sub", "t1", "agent", 0.5, 2.5),
        _span("sm", "sub", "model_call", 0.6, 2.1, turn=1),
        _span("t2", "ag", "tool_call", 0.5, 1.0, turn=1),  # a plain tool of 0.5 s, same turn
        _span("m2", "ag", "model_call", 2.5, 2.75, turn=2),
    ]
    assert span_critical(spans) == 0.5 + 1.5 + 0.25


async def test_latency_series_parallel_against_serial():
    def team(n: int) -> list[a.Agent]:
        return [
            a.Agent(f"r{i}", "Review.", a.ScriptedModel([a.say("ok")], latency=0.01 * (i + 1)))
            for i in range(n)
        ]

    class FanOut:  # what agentnb.parallel returns, reduced to what the tables read
        def __init__(self, results):
            self.results, self.ok = results, True

        @property
        def calls(self):
            return pd.concat([r.calls for r in self.results.values()], ignore_index=True)

    async def fn(mode: str, n: int):
        import asyncio

        if mode == "parallel":
            results = await asyncio.gather(*(a.run(r, "x") for r in team(n)))
            return FanOut({r.last_agent.name: r for r in results})
        return [await a.run(r, "x") for r in team(n)]

    frame = await sweep(fn, {"mode": ["parallel", "serial"], "n": [1, 3]}, progress=False)
    series = latency_series(frame)

    assert series[["mode", "n", "model_calls"]].values.tolist() == [
        ["parallel", 1, 1],
        ["parallel", 3, 3],
        ["serial", 1, 1],
        ["serial", 3, 3],
    ]
    runs = frame.groupby("config")
    latencies = runs["latency_s"].agg(["max", "sum"])
    # the bound: the slowest branch in parallel, every call in turn when serial
    assert series["critical_s"].tolist() == pytest.approx(
        [
            latencies.loc[0, "max"],
            latencies.loc[1, "max"],
            latencies.loc[2, "sum"],
            latencies.loc[3, "sum"],
        ]
    )
    assert latencies.loc[3, "sum"] > latencies.loc[3, "max"]  # three calls of 10, 20 and 30 ms
    assert series["latency_sum_s"].tolist() == pytest.approx(latencies["sum"].tolist())
    assert series["wall_s"].tolist() == runs["wall_s"].first().tolist()
    assert series["overhead_s"].tolist() == (series["wall_s"] - series["critical_s"]).tolist()


async def test_critical_path_of_a_real_run_follows_its_turns():
    reviewers = [
        a.Agent(f"r{i}", "Review.", a.ScriptedModel([a.say("ok")], latency=0.01)) for i in range(2)
    ]
    plan = [a.tool_call("r0", input="x"), a.tool_call("r1", input="x")]
    parallel = await a.run(a.Agent("c", "C.", a.ScriptedModel([plan, a.say("s")]), reviewers), "x")
    serial_plan = [a.tool_call("r0", input="x"), a.tool_call("r1", input="x"), a.say("s")]
    serial = await a.run(
        a.Agent("c", "C.", a.ScriptedModel(serial_plan), [r.clone() for r in reviewers]), "x"
    )

    def durations(result):
        return {s.path: s.duration for s in result.spans if s.kind == "model_call" and s.depth}

    def coordinator(result):
        return sum(s.duration for s in result.spans if s.kind == "model_call" and s.depth == 0)

    assert critical_path(parallel) == pytest.approx(
        coordinator(parallel) + max(durations(parallel).values())
    )
    assert critical_path(serial) == pytest.approx(
        coordinator(serial) + sum(durations(serial).values())
    )


def test_latency_series_needs_a_sweep_frame():
    with pytest.raises(a.UserError, match="sweep frame"):
        latency_series(pd.DataFrame({"n": [1], "span_id": ["s1"]}))


class Verifier:
    """The article's verifier: a deterministic word count against a limit of 12."""

    def __call__(self, request: a.ModelRequest):
        words = len(request.last_user_text.split())
        if words > 12:
            return a.say({"outcome": "redo", "problems": [f"{words} words, the limit is 12"]})
        return a.say({"outcome": "approved", "problems": []})


LONG = "Our service is available every single day of the year with no exceptions at all"
SHORT = "Our service is available every day of the year"


async def test_verifier_rounds_from_a_run_that_calls_the_verifier_as_a_tool():
    verifier_model = a.FunctionModel(Verifier())
    writer_model = a.ScriptedModel(
        [a.tool_call("verifier", input=LONG), a.tool_call("verifier", input=SHORT), a.say(SHORT)]
    )
    writer = a.Agent(
        "writer",
        "Write, then verify.",
        writer_model,
        [a.Agent("verifier", "Count words.", verifier_model)],
    )
    result = await a.run(writer, "Write a slogan of at most 12 words.")
    table = verifier_table(result)

    assert table[["round", "outcome", "problems", "n_problems", "draft"]].values.tolist() == [
        [1, "redo", ["15 words, the limit is 12"], 1, LONG],
        [2, "approved", [], 0, SHORT],
    ]
    w, v = writer_model.requests, verifier_model.requests
    assert table["chars_in"].tolist() == [
        len(canonical_request(w[0])) + len(canonical_request(v[0])),
        len(canonical_request(w[1])) + len(canonical_request(v[1])),
    ]


def test_verifier_rounds_from_recorded_rounds():
    from dataclasses import dataclass

    @dataclass
    class Round:
        draft: str
        outcome: str
        problems: list[str]
        chars: int

    table = verifier_table(
        [
            Round(LONG, "redo", ["15 words, the limit is 12"], 900),
            {"draft": SHORT, "outcome": "approved", "problems": [], "chars_in": 1000},
        ]
    )
    assert table[["round", "outcome", "n_problems", "chars_in"]].values.tolist() == [
        [1, "redo", 1, 900],
        [2, "approved", 0, 1000],
    ]

    class Looped:
        rounds = [Round(SHORT, "approved", [], 10)]

    assert verifier_table(Looped())["outcome"].tolist() == ["approved"]
    with pytest.raises(a.UserError, match="verify_loop"):
        verifier_table(42)
