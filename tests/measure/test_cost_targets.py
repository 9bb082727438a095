"""The cost targets of agent-as-tool, on the article's contract-review scenario.

We measure characters sent (the canonical JSON of every request, `agentnb.trace.sizes`) summed
over the whole run, against a generalist that reads the 1,043-character clause once, for an
orchestrator with k = 1, 2, 3, 5 reviewers, in three modes (`agentnb.measure.scenarios`):

- inline: the orchestrator pastes the clause as each tool argument (the article's setup);
- (a) handle: the clause is the run's input, forwarded as ``artifacts=["input"]``;
- (b) attached: the clause is attached to the run and routed by the handle ``clause``;
- (c) team: attached, with the reviewers behind one `agentnb.team` tool instead of one each.

The article measured inline with openai-agents 0.24: 4.9x / 7.7x / 10.6x / 16.3x, about 3,200
characters per added sub-agent. Our serialisation is not the SDK's, so inline is asserted to
reproduce that shape within a tolerance, not the exact figures: 10 %, since a sub-agent's tool
offers no ``artifacts`` parameter when the run has no document to route (inline: 352 characters
of tool spec per reviewer against 596 when every tool offered free-string handles, which put
agentnb within 2 % of the article's figures). The targets: (a) k=3 <= 8.0x and
<= 2,300 characters per added sub-agent; (b) k=3 <= 6.5x; (c) k=3 <= 5.5x and <= 1,700
characters per added sub-agent. Every reviewer must still receive the full clause.
"""

from __future__ import annotations

import pytest

import agentnb as a
from agentnb import RunResult
from agentnb.measure.scenarios import CLAUSE, COST_KS, COST_MODES, review_hierarchy
from agentnb.measure.scenarios import generalist as run_generalist
from agentnb.trace import canonical_request

ARTICLE_INLINE = {1: 4.9, 2: 7.7, 3: 10.6, 5: 16.3}
ARTICLE_PER_SUB_AGENT = 3_200


@pytest.fixture(scope="module")
def baseline() -> RunResult:
    return a.run_sync(run_generalist())


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, int], RunResult]:
    return {
        (mode, k): a.run_sync(review_hierarchy(k, mode)) for mode in COST_MODES for k in COST_KS
    }


def table(runs, baseline, mode: str) -> dict[int, tuple[int, float]]:
    """k -> (characters sent, multiplier against the generalist)."""
    base = baseline.chars_in
    return {k: (runs[mode, k].chars_in, runs[mode, k].chars_in / base) for k in COST_KS}


def per_sub_agent(rows: dict[int, tuple[int, float]]) -> float:
    """The slope of a least-squares line through (k, characters sent)."""
    ks = list(rows)
    ys = [rows[k][0] for k in ks]
    mean_k, mean_y = sum(ks) / len(ks), sum(ys) / len(ys)
    return sum((k - mean_k) * (y - mean_y) for k, y in zip(ks, ys)) / sum(
        (k - mean_k) ** 2 for k in ks
    )


def test_the_generalist_reads_the_clause_once(baseline):
    assert len(CLAUSE) == 1_043
    assert baseline.ok and baseline.model_calls == 1
    (row,) = baseline.calls.to_dict("records")
    assert row["chars_in_user"] == len(CLAUSE)
    assert 1_100 <= baseline.chars_in <= 1_200  # the article's generalist sent 1,119


def test_inline_reproduces_the_article_shape(runs, baseline):
    rows = table(runs, baseline, "inline")

    for k, expected in ARTICLE_INLINE.items():
        assert rows[k][1] == pytest.approx(expected, rel=0.10), (k, rows[k])
        assert rows[k][1] < expected  # the SDK's tool specs are the larger
    assert per_sub_agent(rows) == pytest.approx(ARTICLE_PER_SUB_AGENT, rel=0.10)


def test_a_by_handle_meets_its_targets(runs, baseline):
    rows = table(runs, baseline, "handle")

    assert rows[3][1] <= 8.0, rows
    assert per_sub_agent(rows) <= 2_300, rows
    assert rows[3][0] < table(runs, baseline, "inline")[3][0]


def test_b_attached_meets_its_target(runs, baseline):
    rows = table(runs, baseline, "attached")

    assert rows[3][1] <= 6.5, rows
    assert per_sub_agent(rows) <= 2_300, rows
    assert rows[3][0] < table(runs, baseline, "handle")[3][0]


def test_c_one_team_tool_meets_its_target(runs, baseline):
    rows = table(runs, baseline, "team")

    assert rows[3][1] <= 5.5, rows
    assert per_sub_agent(rows) <= 1_700, rows
    # the saving is the tool specs: one spec, whatever k
    specs = {k: runs["team", k].calls["chars_in_tools"].iloc[0] for k in COST_KS}
    attached = {k: runs["attached", k].calls["chars_in_tools"].iloc[0] for k in COST_KS}
    assert specs[5] - specs[1] < 100 < attached[5] - attached[1]


def reviewers(result: RunResult) -> list[a.AgentTool]:
    """The reviewers' tools, behind their own tools or behind one team tool."""
    out: list[a.AgentTool] = []
    for tool in result.last_agent.tool_map().values():
        out.extend(tool.members if isinstance(tool, a.TeamTool) else [tool])
    return out


def test_the_cost_grows_linearly_with_the_sub_agents(runs, baseline):
    for mode in COST_MODES:
        rows = table(runs, baseline, mode)
        slope = per_sub_agent(rows)
        intercept = rows[1][0] - slope
        assert all(rows[k][0] == pytest.approx(intercept + slope * k) for k in COST_KS), mode


@pytest.mark.parametrize("mode", COST_MODES)
def test_every_sub_agent_receives_the_full_clause(runs, mode):
    for k in COST_KS:
        result = runs[mode, k]
        assert result.ok, result.error
        tools = reviewers(result)
        assert len(tools) == k
        for tool in tools:
            (request,) = tool.agent.model.requests
            assert CLAUSE in request.last_user_text
        assert (result.calls["depth"] == 1).sum() == k


def test_where_the_saving_comes_from(runs):
    # inline: the orchestrator generated the clause k times and rereads those arguments
    inline = runs["inline", 3].calls
    assert inline["chars_in_tool_args"].iloc[-1] > 3 * len(CLAUSE)
    # by handle: only a short task per call; the clause is still in its history (the run input)
    handle = runs["handle", 3].calls
    assert handle["chars_in_tool_args"].iloc[-1] < 300
    # attached: the orchestrator never reads the clause at all
    attached = runs["attached", 3]
    coordinator = attached.last_agent
    assert all(CLAUSE not in canonical_request(r) for r in coordinator.model.requests)
    assert attached.calls["chars_in_user"].iloc[0] < 200  # the task and the list of handles
