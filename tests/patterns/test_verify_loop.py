"""verify_loop(): draft, verify against an objective check, rewrite in the same conversation."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

import agentnb as a

TASK = "Describe the availability of the platform in at most 12 words."
LONG = "Our platform remains reachable nearly all the time, though planned maintenance windows can interrupt access"
LONGER = "Our platform remains reachable nearly all the time, although planned maintenance windows can sometimes interrupt access"
SHORT = "Only planned maintenance can briefly interrupt the platform."


def word_limit(request: a.ModelRequest) -> object:
    """The verifier of these tests: an objective word count of the draft it receives."""
    draft = request.last_user_text.split("DRAFT:\n", 1)[1]
    words = len(draft.split())
    if words > 12:
        return a.say({"outcome": "redo", "problems": [f"{words} words, the limit is 12"]})
    return a.say({"outcome": "approved", "problems": []})


def verifier() -> a.Agent:
    return a.Agent("Verifier", "Check only the specification.", a.FunctionModel(word_limit))


async def test_a_long_draft_is_rejected_then_the_rewrite_is_approved():
    assert (len(LONG.split()), len(SHORT.split())) == (15, 8)
    writer_model = a.ScriptedModel([LONG, SHORT])
    writer = a.Agent("Writer", "Write the requested text.", writer_model)
    check = verifier()
    result = await a.verify_loop(writer, check, TASK, max_rounds=2)

    assert result.ok and result.approved and result.remaining == []
    assert result.output == SHORT and len(result.rounds) == 2
    first, second = result.rounds
    assert (first.draft, first.outcome, first.problems) == (
        LONG,
        "redo",
        ["15 words, the limit is 12"],
    )
    assert (second.draft, second.outcome, second.problems) == (SHORT, "approved", [])

    # the writer continued its own conversation and was shown the problem
    again = writer_model.requests[1].messages
    assert [m.role for m in again] == ["user", "assistant", "user"]
    assert again[0].content == TASK and again[1].content == LONG
    assert "15 words, the limit is 12" in (again[2].content or "")
    # the verifier received the task and the draft, and was asked for a Verification
    seen = check.model.requests  # type: ignore[union-attr]
    assert [r.last_user_text for r in seen] == [
        f"TASK:\n{TASK}\n\nDRAFT:\n{d}" for d in (LONG, SHORT)
    ]
    assert seen[0].output_schema is not None and seen[0].output_schema.name == "verification"

    table = result.table()
    assert list(table["outcome"]) == ["redo", "approved"]
    calls = result.calls
    assert list(zip(calls["round"], calls["role"])) == [
        (1, "writer"),
        (1, "verifier"),
        (2, "writer"),
        (2, "verifier"),
    ]
    per_round = calls.groupby("round")["chars_in"].sum()
    assert list(table["chars_in"]) == list(per_round)
    assert list(table["chars_in"]) == [r.chars_in for r in result.rounds]
    assert sum(table["chars_in"]) == result.chars_in
    # one vocabulary with verifier_table, and nothing that changes from run to run by default
    chars = ["chars_writer", "chars_verifier", "chars_in"]
    assert set(table.columns) <= set(a.verifier_table(result).columns)
    assert table[chars].equals(a.verifier_table(result)[chars])
    with_ids = result.table(run_ids=True)
    assert list(with_ids["writer_run_id"]) == [r.writer.run_id for r in result.rounds]
    assert list(with_ids["verifier_run_id"]) == [r.verifier.run_id for r in result.rounds]  # type: ignore[union-attr]
    assert table.loc[1, "chars_writer"] > table.loc[0, "chars_writer"]  # it rereads its history


async def test_a_draft_never_approved_stops_at_max_rounds_and_says_what_remains():
    writer_model = a.ScriptedModel([LONG, LONGER, "unused"])
    check = verifier()
    result = await a.verify_loop(
        a.Agent("Writer", "Write.", writer_model), check, TASK, max_rounds=2
    )

    assert result.ok and not result.approved
    assert result.output == LONGER  # delivered anyway
    assert result.remaining == ["16 words, the limit is 12"]
    assert len(result.rounds) == 2
    assert len(writer_model.requests) == 2 and len(check.model.requests) == 2  # type: ignore[union-attr]
    assert "not approved, remaining=['16 words, the limit is 12']" in repr(result)


class Check(BaseModel):
    outcome: Literal["approved", "redo"]
    problems: list[str]
    score: int


async def test_the_verifier_may_declare_a_compatible_output_type():
    model = a.ScriptedModel([a.say({"outcome": "approved", "problems": [], "score": 9})])
    check = a.Agent("Verifier", "Check.", model, output_type=Check)
    result = await a.verify_loop(a.Agent("W", "Write.", a.ScriptedModel([SHORT])), check, TASK)
    assert result.approved and result.rounds[0].verifier.output.score == 9  # type: ignore[union-attr]
    assert model.requests[0].output_schema.name == "check"  # type: ignore[union-attr]

    class Grade(BaseModel):
        grade: int

    with pytest.raises(a.UserError, match="'outcome'.*'problems'"):
        await a.verify_loop(
            a.Agent("W", "x", a.ScriptedModel([SHORT])),
            a.Agent("V", "x", model, output_type=Grade),
            TASK,
        )
    with pytest.raises(a.UserError, match="max_rounds"):
        await a.verify_loop(a.Agent("W", "x", a.ScriptedModel([SHORT])), check, TASK, max_rounds=0)


async def test_a_verifier_that_fails_leaves_the_draft_unverified():
    broken = a.Agent("Verifier", "Check.", a.ScriptedModel([]))
    result = await a.verify_loop(a.Agent("W", "Write.", a.ScriptedModel([SHORT])), broken, TASK)
    assert not result.ok and not result.approved and result.output == SHORT
    assert result.error is not None and "ScriptExhausted" in result.error
    assert result.remaining[0].startswith("the last draft was not verified")
