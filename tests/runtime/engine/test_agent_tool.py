"""Agents as tools: context isolation, what goes back to the caller, and the governance options
of `Agent.as_tool` (timeout, max_turns, max_tokens, max_result_chars, structured input, extractor)."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field

import agentnb as a

CLAUSE = (
    "The provider shall keep the platform reachable at all times and shall repay the whole "
    "yearly subscription after any outage of more than sixty seconds."
)


class Opinion(BaseModel):
    verdict: Literal["acceptable", "needs_changes", "unacceptable"]
    reason: str
    quote: str = Field(description="The words of the clause the opinion relies on.")


def reviewer(name: str, verdict: str, reason: str, **agent_options) -> a.Agent:
    """A reviewer whose scripted model answers one structured opinion."""
    opinion = Opinion(verdict=verdict, reason=reason, quote=CLAUSE[:32])  # type: ignore[arg-type]
    return a.Agent(
        name,
        f"You review contract clauses from the {name} point of view. Quote what you rely on.",
        a.ScriptedModel([a.say(opinion)]),
        output_type=Opinion,
        **agent_options,
    )


def three_reviewers() -> list[a.Agent]:
    return [
        reviewer("legal", "needs_changes", "An absolute guarantee is an obligation of result."),
        reviewer("tax", "acceptable", "Outside my scope."),
        reviewer("technical", "unacceptable", "No platform is reachable 100% of the time."),
    ]


def coordinator(tools: list, script: list) -> a.Agent:
    return a.Agent(
        "coordinator", "Ask every reviewer, then synthesise.", a.ScriptedModel(script), tools
    )


def ask_all(names: list[str], **arguments) -> list[a.ToolCall]:
    """One turn that calls every named tool with the same arguments."""
    return [a.tool_call(name, **arguments) for name in names]


# -- the three-reviewer hierarchy -------------------------------------------------------------


async def test_each_reviewer_sees_only_its_instructions_and_the_call_input():
    reviewers = three_reviewers()
    boss = coordinator(
        reviewers,
        [ask_all(["legal", "tax", "technical"], input=CLAUSE), a.say("Overall: unacceptable.")],
    )

    result = await a.run(boss, "Please review: " + CLAUSE)

    assert result.ok, result.error
    assert result.output == "Overall: unacceptable."
    assert result.last_agent is boss
    for agent in reviewers:
        (request,) = agent.model.requests
        assert request.system == agent.instructions
        # a fresh history: the call's input, nothing of the coordinator's conversation
        assert [(m.role, m.content) for m in request.messages] == [("user", CLAUSE)]
        assert request.tools == []
        assert request.output_schema is not None and request.output_schema.name == "opinion"


async def test_coordinator_second_request_holds_the_three_opinions_as_json():
    boss = coordinator(
        three_reviewers(),
        [ask_all(["legal", "tax", "technical"], input=CLAUSE), a.say("Overall: unacceptable.")],
    )

    await a.run(boss, CLAUSE)

    first, second = boss.model.requests
    assert first.tool_results == []
    opinions = [json.loads(text) for text in second.tool_results]  # JSON, not a Python repr
    assert [o["verdict"] for o in opinions] == ["needs_changes", "acceptable", "unacceptable"]
    assert all(o["quote"] == CLAUSE[:32] for o in opinions)
    assert not any("verdict='" in text for text in second.tool_results)


async def test_calls_has_one_row_per_model_call_at_every_depth_in_start_order():
    boss = coordinator(
        three_reviewers(),
        [ask_all(["legal", "tax", "technical"], input=CLAUSE), a.say("Overall: unacceptable.")],
    )

    result = await a.run(boss, CLAUSE)
    calls = result.calls

    # rows are in the order the calls started: the coordinator's first turn, the three
    # reviewers it asked for (in the order it asked), then its second turn
    assert list(calls["depth"]) == [0, 1, 1, 1, 0]
    assert sorted(calls["depth"]) == [0, 0, 1, 1, 1]
    assert list(calls["agent"]) == ["coordinator", "legal", "tax", "technical", "coordinator"]
    assert list(calls["path"]) == [
        "coordinator",
        "coordinator/legal",
        "coordinator/tax",
        "coordinator/technical",
        "coordinator",
    ]
    assert list(calls["turn"]) == [1, 1, 1, 1, 2]
    assert set(calls["run_id"]) == {result.run_id}
    assert list(calls["started"]) == sorted(calls["started"])


async def test_rows_stay_in_start_order_when_sub_agents_finish_in_reverse():
    # legal waits until technical has answered, so the three finish in reverse order
    technical_done = asyncio.Event()

    async def legal_reply(request: a.ModelRequest):
        await technical_done.wait()
        return a.say("legal: fine")

    def technical_reply(request: a.ModelRequest):
        technical_done.set()
        return a.say("technical: fine")

    legal = a.Agent("legal", "Legal review.", a.FunctionModel(legal_reply))
    technical = a.Agent("technical", "Technical review.", a.FunctionModel(technical_reply))
    boss = coordinator([legal, technical], [ask_all(["legal", "technical"], input="x"), "done"])

    result = await a.run(boss, "x")

    assert result.ok, result.error
    spans = {s.path: s for s in result.spans if s.kind == "model_call"}
    assert spans["coordinator/technical"].ended < spans["coordinator/legal"].ended
    assert list(result.calls["agent"]) == ["coordinator", "legal", "technical", "coordinator"]
    # the tool results keep the order of the calls, whatever order they finished in
    assert boss.model.requests[1].tool_results == ["legal: fine", "technical: fine"]


async def test_usage_rolls_up_every_call_at_every_depth():
    def reply(text: str, tokens_in: int, tokens_out: int) -> a.ModelResponse:
        return a.ModelResponse(text=text, usage=a.Usage(tokens_in, tokens_out))

    legal = a.Agent("legal", "Legal review.", a.ScriptedModel([reply("ok", 50, 5)]))
    tax = a.Agent("tax", "Tax review.", a.ScriptedModel([reply("ok", 40, 4)]))
    first_turn = a.ModelResponse(
        tool_calls=ask_all(["legal", "tax"], input=CLAUSE), usage=a.Usage(100, 20)
    )
    boss = coordinator([legal, tax], [first_turn, reply("Both fine.", 160, 3)])

    result = await a.run(boss, CLAUSE)

    assert result.usage == a.Usage(100 + 50 + 40 + 160, 20 + 5 + 4 + 3, 4)
    assert list(result.calls["provider_tokens_in"]) == [100, 50, 40, 160]
    assert set(result.calls["tokens_method"]) == {"provider"}


# -- what goes back to the caller ---------------------------------------------------------------


async def test_extractor_decides_what_goes_back():
    seen: list[a.RunResult] = []

    def verdict_only(result: a.RunResult) -> str:
        seen.append(result)
        return f"{result.output.verdict}: {result.output.reason}"

    legal = reviewer("legal", "needs_changes", "Too absolute.")
    boss = coordinator(
        [legal.as_tool(extractor=verdict_only)],
        [a.tool_call("legal", input=CLAUSE), a.say("Needs changes.")],
    )

    await a.run(boss, CLAUSE)

    assert boss.model.requests[1].tool_results == ["needs_changes: Too absolute."]
    (sub,) = seen
    assert sub.ok and isinstance(sub.output, Opinion)
    assert sub.path == "coordinator/legal"
    assert list(sub.calls["agent"]) == ["legal"]  # the sub-agent's own calls only


async def test_input_schema_and_builder_give_structured_input():
    class TaxQuestion(BaseModel):
        document: str = Field(description="Handle of the document to check.")
        topic: Literal["vat", "invoicing"]

    def build(question: TaxQuestion, context: a.RunContext) -> str:
        return f"Check the {question.topic} of:\n{context.artifacts[question.document]}"

    tax = a.Agent("tax", "Tax review.", a.ScriptedModel([a.say("VAT is fine.")]))
    tool = tax.as_tool(input_schema=TaxQuestion, input_builder=build)
    boss = coordinator(
        [tool],
        [
            a.tool_call("tax", document="clause", topic="customs"),  # not an allowed topic
            a.tool_call("tax", document="clause", topic="vat"),
            a.say("VAT is fine."),
        ],
    )

    result = await a.run(boss, "Check the clause.", artifacts={"clause": CLAUSE})

    assert result.ok, result.error
    spec = boss.model.requests[0].tools[0]
    assert set(spec.parameters["properties"]) == {"document", "topic"}
    assert spec.parameters["properties"]["topic"]["enum"] == ["vat", "invoicing"]
    bad, good = boss.model.requests[2].tool_results
    assert bad.startswith("ERROR: invalid arguments for tax: topic")
    assert good == "VAT is fine."
    (request,) = tax.model.requests  # the invalid call never reached the sub-agent
    assert request.last_user_text == f"Check the vat of:\n{CLAUSE}"


async def test_input_schema_without_builder_sends_the_arguments_as_json():
    class Question(BaseModel):
        topic: str
        year: int

    tax = a.Agent("tax", "Tax review.", a.ScriptedModel([a.say("ok")]))
    boss = coordinator(
        [tax.as_tool(input_schema=Question)], [a.tool_call("tax", topic="vat", year=2024), "done"]
    )

    await a.run(boss, "x")

    assert json.loads(tax.model.requests[0].last_user_text) == {"topic": "vat", "year": 2024}


async def test_max_result_chars_cuts_a_long_answer_and_says_so():
    wall = "word " * 100  # 500 characters
    legal = a.Agent("legal", "Legal review.", a.ScriptedModel([a.say(wall)]))
    boss = coordinator(
        [legal.as_tool(max_result_chars=120)], [a.tool_call("legal", input=CLAUSE), "done"]
    )

    await a.run(boss, CLAUSE)

    (text,) = boss.model.requests[1].tool_results
    assert text.startswith(wall[:120])
    assert wall[:121] not in text
    assert text.endswith("[truncated: 380 of 500 characters cut; the limit is 120]")


# -- a sub-agent that fails, is slow or is cut by a limit: the caller is told, and goes on ------


async def test_a_slow_sub_agent_gives_a_did_not_answer_text_and_the_coordinator_goes_on():
    slow = a.Agent("slow", "Slow review.", a.ScriptedModel([a.say("late")], latency=30.0))
    fast = a.Agent("fast", "Fast review.", a.ScriptedModel([a.say("fast: fine")]))
    boss = coordinator(
        [slow.as_tool(timeout=0.3), fast],
        [ask_all(["slow", "fast"], input=CLAUSE), a.say("One opinion is missing: slow.")],
    )

    result = await a.run(boss, CLAUSE)

    assert result.ok, result.error
    assert result.output == "One opinion is missing: slow."
    assert boss.model.requests[1].tool_results == [
        "ERROR: slow did not answer within 0.3 s.",
        "fast: fine",
    ]
    agent_span = next(s for s in result.spans if s.kind == "agent" and s.agent == "slow")
    assert agent_span.status == "timeout"
    tool_span = next(s for s in result.spans if s.kind == "tool_call" and s.name == "slow")
    assert tool_span.status == "timeout"
    ends = [json.loads(line) for line in result.log_lines()]
    assert {"event": "sub_agent_end", "agent": "slow", "status": "timeout"}.items() <= next(
        e for e in ends if e["event"] == "sub_agent_end" and e["agent"] == "slow"
    ).items()
    assert all(s.ended is not None for s in result.spans)


async def test_max_turns_on_the_tool_stops_the_sub_agent_with_its_partial_result():
    @a.tool
    def rates(country: str) -> str:
        """Look up the VAT rates of a country."""
        return f"{country}: 22%"

    tax = a.Agent(
        "tax",
        "Tax review.",
        a.ScriptedModel(
            [
                [a.say("Looking up Italy."), a.tool_call("rates", country="IT")],
                [a.say("Italy is 22%; now France."), a.tool_call("rates", country="FR")],
                [a.say("never reached"), a.tool_call("rates", country="DE")],
            ]
        ),
        [rates],
    )
    boss = coordinator(
        [tax.as_tool(max_turns=2)],
        [a.tool_call("tax", input=CLAUSE), a.say("Tax opinion incomplete.")],
    )

    result = await a.run(boss, CLAUSE)

    assert result.ok, result.error
    assert len(tax.model.requests) == 2  # the tool's max_turns, not the agent's own 10
    assert boss.model.requests[1].tool_results == [
        "ERROR: tax stopped after 2 turns without a final answer. "
        "Partial result: Italy is 22%; now France."
    ]
    end = [json.loads(x) for x in result.log_lines() if '"sub_agent_end"' in x]
    assert end[0]["turns"] == 2 and end[0]["status"] == "error"


async def test_max_tokens_on_the_tool_stops_the_sub_agent_but_not_the_run():
    tax = a.Agent(
        "tax",
        "Tax review.",
        a.ScriptedModel(
            [
                a.ModelResponse(
                    text="Reading the tax code.",
                    tool_calls=[a.tool_call("tax_code")],
                    usage=a.Usage(200, 20),
                ),
                a.ModelResponse(tool_calls=[a.tool_call("tax_code")], usage=a.Usage(200, 20)),
            ]
        ),
        [a.tool(lambda: "...", name="tax_code", description="The tax code.")],
    )
    boss = coordinator(
        [tax.as_tool(max_tokens=300)],
        [a.tool_call("tax", input=CLAUSE), a.say("No tax opinion.")],
    )

    result = await a.run(boss, CLAUSE)

    assert result.ok, result.error
    assert boss.model.requests[1].tool_results == [
        "ERROR: tax stopped: Token budget of tax (as_tool max_tokens) exceeded at "
        "coordinator/tax: 440 tokens used, the limit is 300 (counted with provider-reported usage). "
        "Partial result: Reading the tax code."
    ]
    assert result.usage.input_tokens == 400  # the calls it made still count


async def test_a_failing_sub_agent_is_reported_and_depth_is_restored():
    broken = a.Agent("broken", "Review.", a.ScriptedModel([]))  # runs out of script at once
    legal = a.Agent("legal", "Legal review.", a.ScriptedModel([a.say("fine")]))
    boss = coordinator(
        [broken, legal],
        [a.tool_call("broken", input="x"), a.tool_call("legal", input="x"), "Legal only."],
    )

    result = await a.run(boss, "x")

    assert result.ok, result.error
    (failure,) = boss.model.requests[1].tool_results
    assert failure.startswith(
        "ERROR: broken failed: ScriptExhausted: ScriptedModel for agent 'broken'"
    )
    assert boss.model.requests[2].tool_results[1] == "fine"
    legal_row = result.calls[result.calls["agent"] == "legal"].iloc[0]
    assert (legal_row["depth"], legal_row["path"]) == (1, "coordinator/legal")
    assert result.context.active == [] and result.context.depth == 0


# -- the tool spec and construction mistakes ----------------------------------------------------


def test_default_tool_spec_is_short_and_offers_handles_only_when_asked():
    agent = a.Agent("legal", "Legal review.", a.ScriptedModel([]), description="Civil law.")
    tool = agent.as_tool()

    spec = tool.spec  # outside a run: a run with only its input, nothing to route
    assert (spec.name, spec.description) == ("legal", "Civil law.")
    assert set(spec.parameters["properties"]) == {"input"}
    assert spec.parameters["required"] == ["input"]
    # it is resent on every turn of the caller: keep it small
    assert len(json.dumps(spec.as_dict(), separators=(",", ":"))) < 300

    by_handle = agent.as_tool(by_handle=True).spec.parameters["properties"]["artifacts"]
    assert by_handle["items"] == {"type": "string", "enum": ["input"]}
    assert "handle" in by_handle["description"] and "never paste" in by_handle["description"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": 0}, "timeout"),
        ({"max_turns": -1}, "max_turns"),
        ({"max_result_chars": 0}, "max_result_chars"),
        ({"name": "has spaces"}, "not usable"),
        ({"input_schema": dict}, "pydantic model"),
        ({"input_builder": lambda parsed, ctx: ""}, "needs input_schema"),
    ],
)
def test_as_tool_rejects_bad_options_at_once(options, message):
    agent = a.Agent("legal", "Legal review.", a.ScriptedModel([]))
    with pytest.raises(a.UserError, match=message):
        agent.as_tool(**options)
