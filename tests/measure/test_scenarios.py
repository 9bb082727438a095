"""The article's scenarios on scripted models (`agentnb.measure.scenarios`): what each builds and
what its runs show. The cost tables themselves are in test_cost_targets.py."""

from __future__ import annotations

import json

import pytest

import agentnb as a
from agentnb.measure import scenarios as sc


def test_the_constants_have_the_article_sizes():
    assert len(sc.CLAUSE) == 1_043
    assert len(sc.OPINION) == 244
    assert sc.COST_KS == (1, 2, 3, 5)
    assert [len(d.split()) for d in sc.DRAFTS] == [15, 8]


async def test_each_cost_run_is_fresh():
    first = await sc.review_hierarchy(2, "handle")
    second = await sc.review_hierarchy(2, "handle")

    assert first.ok and second.ok
    assert first.last_agent is not second.last_agent
    assert first.chars_in == second.chars_in  # deterministic
    assert len(first.last_agent.model.requests) == 2


async def test_k_zero_is_the_generalist_whatever_the_mode():
    sizes = {mode: (await sc.review_hierarchy(0, mode)).chars_in for mode in sc.COST_MODES}

    assert set(sizes.values()) == {(await sc.generalist()).chars_in}


async def test_attached_mode_runs_with_the_clause_as_an_artifact():
    scenario = sc.cost_scenario(1, "attached")

    assert (scenario.input, scenario.artifacts) == (sc.ATTACHED_INPUT, {"clause": sc.CLAUSE})
    result = await scenario.run(limits=a.Limits(max_model_calls=3))
    reviewer = result.last_agent.tool_map()["opinion_1"].agent
    assert reviewer.model.requests[0].last_user_text == (
        f"{sc.REVIEW_TASK}\n\n## Document: clause\n{sc.CLAUSE}"
    )
    assert result.last_agent.model.requests[1].tool_results == [sc.OPINION]


async def test_latency_is_passed_to_every_model():
    scenario = sc.cost_scenario(2, "inline", latency=0.25)

    tools = scenario.agent.tool_map().values()
    assert scenario.agent.model.latency == 0.25
    assert [t.agent.model.latency for t in tools] == [0.25, 0.25]


@pytest.mark.parametrize(
    ("k", "mode", "message"), [(-1, "inline", "k must be"), (2, "paste", "mode must be one of")]
)
def test_bad_cost_parameters_are_user_errors(k, mode, message):
    with pytest.raises(a.UserError, match=message):
        sc.cost_scenario(k, mode)


# -- the review team ------------------------------------------------------------------------------


async def test_the_review_team_answers_structured_opinions_quoting_what_it_received():
    team = sc.review_team({"technical": 0.01})

    assert list(team) == ["legal", "tax", "technical"]
    assert team["technical"].model.latency == 0.01 and team["legal"].model.latency == 0.0
    results = {name: await a.run(agent, sc.CLAUSE) for name, agent in team.items()}
    opinions = {name: r.output for name, r in results.items()}
    assert all(isinstance(o, sc.Opinion) for o in opinions.values())
    assert {n: o.verdict for n, o in opinions.items()} == {
        "legal": "needs_changes",
        "tax": "acceptable",
        "technical": "unacceptable",
    }
    assert all(o.quote == sc.CLAUSE[:40] for o in opinions.values())
    harshest = max(opinions.values(), key=lambda o: sc.SEVERITY.index(o.verdict))
    assert harshest.verdict == "unacceptable"


def test_an_unknown_reviewer_latency_is_a_user_error():
    with pytest.raises(a.UserError, match=r"unknown reviewer\(s\) \['finance'\]"):
        sc.review_team({"finance": 1.0})


async def test_the_review_coordinator_asks_all_three_and_takes_the_harshest():
    coordinator = sc.review_coordinator()

    result = await a.run(coordinator, sc.CLAUSE)

    assert result.ok, result.error
    assert result.output == (
        "Verdicts: legal needs_changes, tax acceptable, technical unacceptable. Overall: unacceptable."
    )
    assert list(result.calls["depth"]) == [0, 1, 1, 1, 0]
    quotes = [json.loads(t)["quote"] for t in coordinator.model.requests[1].tool_results]
    assert quotes == [sc.CLAUSE[:40]] * 3  # each reviewer had the clause, passed by handle


async def test_a_reviewer_slower_than_its_timeout_is_named_as_missing():
    coordinator = sc.review_coordinator({"technical": 30.0}, timeout=0.2)

    result = await a.run(coordinator, sc.CLAUSE)

    assert result.ok, result.error
    assert result.output == (
        "Verdicts: legal needs_changes, tax acceptable. Missing: technical; no overall verdict."
    )
    assert coordinator.model.requests[1].tool_results[2] == (
        "ERROR: technical did not answer within 0.2 s."
    )


# -- the depth guard ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_depth", "refusal"),
    [(2, "ERROR: maximum depth reached (2)"), (3, "ERROR: legal is already on the call path")],
)
async def test_the_recursion_pair_is_stopped_by_the_guards(max_depth, refusal):
    coordinator = sc.recursion_pair()
    legal = coordinator.tool_map()["legal"].agent
    tax = legal.tool_map()["tax"].agent

    result = await a.run(coordinator, sc.CLAUSE, limits=a.Limits(max_depth=max_depth))

    assert result.ok and result.output == "Synthesis."
    (read,) = tax.model.requests[1].tool_results
    assert read.startswith(refusal)
    assert result.model_calls == 6
    assert result.context.depth == 0
    graph = coordinator.graph()
    assert graph["delegates"][0]["delegates"][0]["delegates"][0]["cycle"] is True


# -- the writer-verifier cycle --------------------------------------------------------------------


async def test_the_verifier_counts_the_words_of_the_draft():
    _, verifier, task = sc.writer_and_verifier()
    long, short = sc.DRAFTS

    rejected = await a.run(verifier, f"TASK:\n{task}\n\nDRAFT:\n{long}")
    approved = await a.run(verifier, f"TASK:\n{task}\n\nDRAFT:\n{short}")

    assert json.loads(rejected.output) == {
        "outcome": "redo",
        "problems": ["15 words, the limit is 12"],
    }
    assert json.loads(approved.output) == {"outcome": "approved", "problems": []}
    assert verifier.output_type is None


@pytest.mark.parametrize(
    "message",
    [
        "TASK:\n{task}\n\nDRAFT:\n{draft}",
        "Draft: {draft}",
        "{task}\n\n## Document: draft\n{draft}",
        "{task}\n{draft}",
    ],
)
def test_draft_in_reads_the_usual_layouts(message):
    draft = sc.DRAFTS[0]
    text = message.format(task=sc.WRITING_TASK, draft=draft)

    assert sc.draft_in(text).split() == draft.split()


async def test_the_writer_rewrites_once_it_has_drafted():
    writer, _, task = sc.writer_and_verifier()

    first = await a.run(writer, task)
    again = await a.run(writer, [*first.messages, a.Message.user("15 words, the limit is 12")])

    assert first.output == sc.DRAFTS[0]
    assert again.output == sc.DRAFTS[1]


async def test_the_cycle_runs_in_verify_loop():
    verify = pytest.importorskip("agentnb.patterns.verify", exc_type=ImportError)
    writer, verifier, task = sc.writer_and_verifier()

    result = await verify.verify_loop(writer, verifier, task, max_rounds=2)

    assert result.approved and result.output == sc.DRAFTS[1]
    assert [(r.outcome, r.problems) for r in result.rounds] == [
        ("redo", ["15 words, the limit is 12"]),
        ("approved", []),
    ]
    assert "15 words, the limit is 12" in writer.model.requests[1].last_user_text
