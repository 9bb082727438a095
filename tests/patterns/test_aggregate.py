"""Deterministic aggregation: harshest by a declared order, majority votes, a structured judge."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

import agentnb as a

SEVERITY = ["acceptable", "needs_changes", "unacceptable"]


class Opinion(BaseModel):
    verdict: Literal["acceptable", "needs_changes", "unacceptable"]
    reason: str = ""


def test_harshest_follows_the_declared_order_not_the_majority():
    outputs = {
        "legal": Opinion(verdict="needs_changes"),
        "tax": Opinion(verdict="needs_changes"),
        "technical": Opinion(verdict="unacceptable"),
    }
    assert a.harshest(outputs, order=SEVERITY) is outputs["technical"]
    assert a.majority(outputs, "verdict").winner == "needs_changes"  # what an average would say
    # a list of dicts works too; on a tie the first wins
    first, second = {"verdict": "needs_changes", "n": 1}, {"verdict": "needs_changes", "n": 2}
    assert a.harshest([{"verdict": "acceptable"}, first, second], order=SEVERITY) is first
    assert a.harshest([{"level": 1}, {"level": 3}], "level", order=[1, 2, 3]) == {"level": 3}


def test_harshest_refuses_what_it_cannot_rank():
    with pytest.raises(a.UserError, match="'catastrophic'.*not in order"):
        a.harshest({"x": {"verdict": "catastrophic"}}, order=SEVERITY)
    with pytest.raises(a.UserError, match="no field 'verdict'"):
        a.harshest([{"grade": "a"}], order=SEVERITY)
    with pytest.raises(a.UserError, match="no outputs"):
        a.harshest({}, order=SEVERITY)
    with pytest.raises(a.UserError, match="severity order"):
        a.harshest([{"verdict": "acceptable"}], order=[])


def test_majority_counts_votes_and_reports_ties():
    vote = a.majority(["yes", "no", "yes", "yes"])
    assert vote.winner == "yes" and vote.counts == {"yes": 3, "no": 1}
    assert vote.voters == {"yes": [0, 2, 3], "no": [1]}
    assert vote.share == 0.75 and vote.absolute and not vote.tied

    tie = a.majority({"a": {"pick": 1}, "b": {"pick": 2}}, "pick")
    assert tie.tied and tie.winner is None and tie.counts == {1: 1, 2: 1} and tie.share == 0.0

    # outputs that cannot be hashed are compared by their JSON
    same = [
        Opinion(verdict="acceptable"),
        Opinion(verdict="acceptable"),
        Opinion(verdict="unacceptable"),
    ]
    assert a.majority(same).winner == Opinion(verdict="acceptable")


def candidates_judge(best: int) -> tuple[a.Agent, a.ScriptedModel]:
    model = a.ScriptedModel([a.say({"best": best, "reason": "the shortest that is complete"})])
    return a.Agent("Judge", "Pick the best candidate.", model), model


async def test_the_judge_picks_one_candidate_with_a_structured_verdict():
    judge, model = candidates_judge(1)
    drafts = {
        "terse": "Up 99%.",
        "clear": "The service is available 99% of the time.",
        "long": "..." * 40,
    }
    verdict = await a.judge(judge, drafts, task="Describe availability in one sentence.")

    assert verdict.ok and verdict.best == "clear" and verdict.output == drafts["clear"]
    assert isinstance(verdict.verdict, a.JudgeVerdict)
    assert verdict.reason == "the shortest that is complete"
    request = model.requests[0]
    assert request.output_schema is not None and request.output_schema.name == "judge_verdict"
    text = request.last_user_text
    assert text.startswith("TASK:\nDescribe availability in one sentence.")
    assert "CANDIDATE 1:\nThe service is available 99% of the time." in text
    assert "terse" not in text and "clear" not in text  # the names cannot sway the choice
    assert len(verdict.calls) == 1
    assert judge.output_type is None  # the caller's agent is left as it was


async def test_a_judge_choosing_a_candidate_that_does_not_exist_is_not_ok():
    judge, _ = candidates_judge(7)
    verdict = await a.judge(judge, ["one", "two"])
    assert not verdict.ok and verdict.best is None
    assert "chose candidate 7, but there are 2" in (verdict.error or "")


async def test_the_judge_over_a_fan_out_needs_every_branch():
    writers = {
        "fast": a.Agent("Fast", "Write.", a.ScriptedModel(["draft A"])),
        "late": a.Agent("Late", "Write.", a.ScriptedModel(["draft B"], latency=30)),
    }
    fan = await a.parallel(writers, "Write a slogan.", timeout=0.2)
    judge, _ = candidates_judge(0)
    with pytest.raises(a.UserError, match="incomplete"):
        await a.judge(judge, fan)
    verdict = await a.judge(judge, fan.outputs)  # explicitly: judge what answered
    assert verdict.best == "fast"


async def test_a_judge_with_an_incompatible_output_type_is_refused():
    model = a.ScriptedModel([a.say({"verdict": "acceptable"})])
    with pytest.raises(a.UserError, match="integer field 'best'"):
        await a.judge(a.Agent("J", "x", model, output_type=Opinion), ["a", "b"])
    assert model.requests == []
