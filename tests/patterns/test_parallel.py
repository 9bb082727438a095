"""parallel(): every branch called, each with its own timeout; a missing branch is explicit."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

import agentnb as a

CLAUSE = (
    "The supplier guarantees 100% availability of the service and refunds the entire annual fee "
    "for any interruption longer than one minute."
)
SEVERITY = ["acceptable", "needs_changes", "unacceptable"]


class Opinion(BaseModel):
    verdict: Literal["acceptable", "needs_changes", "unacceptable"]
    reason: str


def reviewer(name: str, verdict: str, latency: float = 0.0) -> a.Agent:
    model = a.ScriptedModel(
        [a.say({"verdict": verdict, "reason": f"{name} says {verdict}"})], latency
    )
    return a.Agent(name, f"You assess clauses as the {name} reviewer.", model, output_type=Opinion)


def team(technical_latency: float = 0.0) -> dict[str, a.Agent]:
    return {
        "legal": reviewer("Legal", "needs_changes"),
        "tax": reviewer("Tax", "acceptable"),
        "technical": reviewer("Technical", "unacceptable", technical_latency),
    }


def max_overlap(windows: list[tuple[float, float]]) -> int:
    """The most intervals open at one instant (an end at t comes before a start at t)."""
    events = sorted([(s, 1) for s, _ in windows] + [(e, -1) for _, e in windows])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


async def test_parallel_review_every_reviewer_answers_and_the_harshest_verdict_wins():
    agents = team()
    fan = await a.parallel(agents, CLAUSE, timeout=5)

    assert fan.ok and fan.missing == {}
    assert list(fan.outputs) == ["legal", "tax", "technical"]
    assert a.harshest(fan.outputs, "verdict", order=SEVERITY).verdict == "unacceptable"
    assert a.harshest(fan, "verdict", order=SEVERITY) is fan.outputs["technical"]
    for agent in agents.values():  # each reviewer was asked once, with the clause itself
        assert [r.messages[0].content for r in agent.model.requests] == [CLAUSE]  # type: ignore[union-attr]
    calls = fan.calls
    assert list(calls["branch"]) == ["legal", "tax", "technical"]
    assert calls["run_id"].nunique() == 3  # each branch keeps its own run id
    assert set(calls["run_id"]) == {r.run_id for r in fan.results.values()}


async def test_a_reviewer_slower_than_the_timeout_is_missing_and_nothing_else_is():
    agents = team(technical_latency=30)
    fan = await a.parallel(agents, CLAUSE, timeout=0.3)

    assert not fan.ok
    assert fan.missing == {"technical": "did not answer within 0.3 s"}
    assert list(fan.outputs) == ["legal", "tax"]  # completed work is kept
    assert fan.outputs["legal"].verdict == "needs_changes"
    assert isinstance(fan.results["technical"].error, a.RunTimeout)
    assert len(agents["technical"].model.requests) == 1  # type: ignore[union-attr]  # it was asked
    table = fan.table().set_index("branch")
    assert table.loc["technical", "status"] == "timeout"
    assert list(table["status"]) == ["ok", "ok", "timeout"]
    assert fan.calls.set_index("branch").loc["technical", "status"] == "cancelled"
    assert "missing={'technical': 'did not answer within 0.3 s'}" in repr(fan)
    with pytest.raises(a.UserError, match="incomplete.*technical"):
        a.harshest(fan, "verdict", order=SEVERITY)


async def test_a_failing_branch_does_not_cancel_its_siblings():
    broken = a.Agent("Broken", "x", a.ScriptedModel([]))  # fails at once: no script
    slow = reviewer("Slow", "acceptable", latency=0.05)
    fan = await a.parallel({"broken": broken, "slow": slow}, CLAUSE)

    assert list(fan.missing) == ["broken"]
    assert fan.missing["broken"].startswith("failed: ScriptExhausted")
    assert fan.outputs["slow"].verdict == "acceptable"
    table = fan.table().set_index("branch")
    assert table.loc["broken", "ended"] < table.loc["slow", "ended"]  # it failed while slow ran


async def test_max_concurrency_caps_branches_running_at_once():
    def five() -> dict[str, a.Agent]:  # plain-text answers: nothing slow between model calls
        return {f"r{i}": a.Agent(f"R{i}", "x", a.ScriptedModel(["ok"], 0.05)) for i in range(5)}

    free = (await a.parallel(five(), CLAUSE)).table()
    capped = (await a.parallel(five(), CLAUSE, max_concurrency=2)).table()
    serial = (await a.parallel(five(), CLAUSE, max_concurrency=1)).table()

    assert max_overlap(list(zip(free["started"], free["ended"]))) == 5
    assert max_overlap(list(zip(capped["started"], capped["ended"]))) == 2
    ends, starts = list(serial["ended"]), list(serial["started"])
    assert all(end <= start for end, start in zip(ends, starts[1:]))  # one at a time, in order


async def test_each_branch_may_get_its_own_input():
    agents = {"legal": reviewer("Legal", "acceptable"), "tax": reviewer("Tax", "acceptable")}
    await a.parallel(agents, {"legal": "clause A", "tax": "clause B"})
    assert agents["legal"].model.requests[0].last_user_text == "clause A"  # type: ignore[union-attr]
    assert agents["tax"].model.requests[0].last_user_text == "clause B"  # type: ignore[union-attr]
    with pytest.raises(a.UserError, match=r"missing \['tax'\]"):
        await a.parallel(agents, {"legal": "clause A"})


async def test_mistakes_raise_before_any_branch_starts():
    fine = reviewer("Fine", "acceptable")
    with pytest.raises(a.UserError, match="has no model"):
        await a.parallel({"fine": fine, "nomodel": a.Agent("NoModel", "x")}, CLAUSE)
    with pytest.raises(a.UserError, match="max_concurrency"):
        await a.parallel({"fine": fine}, CLAUSE, max_concurrency=0)
    with pytest.raises(a.UserError, match="two agents are named"):
        await a.parallel([fine, fine], CLAUSE)
    assert fine.model.requests == []  # type: ignore[union-attr]


async def test_a_bad_input_or_option_of_any_branch_raises_before_the_first_branch_starts():
    first, last = reviewer("First", "acceptable"), reviewer("Last", "acceptable")
    branches = {"first": first, "last": last}
    with pytest.raises(a.UserError, match="branch 'last''s input must be text"):
        await a.parallel(branches, {"first": CLAUSE, "last": 42})  # type: ignore[dict-item]
    with pytest.raises(a.UserError, match="parallel\\(\\)'s input must be text"):
        await a.parallel(branches, 42)  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="model_settings"):
        await a.parallel(branches, CLAUSE, model_settings="hot")  # type: ignore[typeddict-item]
    with pytest.raises(a.UserError, match="session="):
        await a.parallel(branches, CLAUSE, session=a.Session())
    assert first.model.requests == [] and last.model.requests == []  # type: ignore[union-attr]


async def test_5000_branches_made_as_they_start_each_have_their_own_run_on_the_shared_clock():
    n = 5000
    agents = {
        f"b{i}": a.Agent(f"B{i}", "Answer.", a.ScriptedModel([a.say(f"{i}")])) for i in range(n)
    }
    fan = await a.parallel(agents, CLAUSE)
    assert fan.ok and fan.outputs == {f"b{i}": f"{i}" for i in range(n)}
    assert fan.model_calls == n and len(fan.calls) == n
    runs = [fan[f"b{i}"] for i in range(n)]
    assert len({r.run_id for r in runs}) == n
    assert len({r.trace.t0 for r in runs}) == 1  # one time zero for every branch
    assert all(r.context is not None and r.context.trace is r.trace for r in runs)
    for i, run in enumerate(runs):
        assert [s.kind for s in run.trace.spans] == ["run", "agent", "model_call"]
        root, agent, call = run.trace.spans
        assert (root.parent_id, agent.parent_id, call.parent_id) == (
            None,
            root.span_id,
            agent.span_id,
        )
        assert root.agent == agent.agent == call.agent == f"B{i}"
        assert [row.span_id for row in run.trace.call_rows] == [call.span_id]
        assert agents[f"b{i}"].model.requests[0].last_user_text == CLAUSE  # type: ignore[union-attr]


def test_scripts_run_a_fan_out_with_run_sync():
    fan = a.run_sync(a.parallel([reviewer("Legal", "acceptable")], CLAUSE))
    assert fan.ok and list(fan.outputs) == ["Legal"]
