"""Documents passed by handle: the orchestrator names a document, the runtime puts its text into
the sub-agent's input, so the orchestrator never writes the document out as a tool argument."""

from __future__ import annotations

import pytest

import agentnb as a
from agentnb.trace import canonical_request

CLAUSE = (
    "The provider shall keep the platform reachable at all times and shall repay the whole "
    "yearly subscription after any outage of more than sixty seconds."
)
ANNEX = "Annex B: service credits are capped at 10% of the monthly fee."


def pair(tool_step, final: str = "Synthesis.") -> tuple[a.Agent, a.Agent]:
    legal = a.Agent("legal", "Legal review.", a.ScriptedModel(["legal: needs changes"]))
    coordinator = a.Agent(
        "coordinator", "Ask legal, then synthesise.", a.ScriptedModel([tool_step, final]), [legal]
    )
    return coordinator, legal


async def test_the_run_input_is_the_handle_input():
    coordinator, legal = pair(a.tool_call("legal", input="Review it.", artifacts=["input"]))

    result = await a.run(coordinator, CLAUSE)

    assert result.ok, result.error
    (request,) = legal.model.requests
    assert [m.content for m in request.messages] == [f"Review it.\n\n## Document: input\n{CLAUSE}"]
    # the orchestrator generated a short argument, not the document
    assert CLAUSE not in coordinator.model.requests[1].messages[1].tool_calls[0].arguments
    assert result.calls["chars_in_tool_args"].iloc[-1] < 60


async def test_attached_documents_reach_the_sub_agent_but_never_the_orchestrator():
    coordinator, legal = pair(
        a.tool_call("legal", input="Review the clause.", artifacts=["clause", "annex"])
    )

    result = await a.run(
        coordinator, "Review the attached clause.", artifacts={"clause": CLAUSE, "annex": ANNEX}
    )

    assert result.ok, result.error
    assert legal.model.requests[0].last_user_text == (
        f"Review the clause.\n\n## Document: clause\n{CLAUSE}\n\n## Document: annex\n{ANNEX}"
    )
    for request in coordinator.model.requests:  # routed without reading
        text = canonical_request(request)
        assert CLAUSE not in text and ANNEX not in text


async def test_the_root_message_lists_the_attached_documents():
    coordinator, _ = pair(a.tool_call("legal", input="Review.", artifacts=["clause"]))

    await a.run(
        coordinator, "Review the attached clause.", artifacts={"clause": CLAUSE, "annex": ANNEX}
    )

    (message,) = coordinator.model.requests[0].messages
    assert message.content == (
        "Review the attached clause.\n\n[Attached documents, pass them to tools by handle: "
        f"clause ({len(CLAUSE):,} characters), annex ({len(ANNEX):,} characters)]"
    )


async def test_without_attachments_the_root_message_is_the_input_alone():
    coordinator, _ = pair(a.tool_call("legal", input="Review.", artifacts=["input"]))

    await a.run(coordinator, CLAUSE)

    assert [m.content for m in coordinator.model.requests[0].messages] == [CLAUSE]


async def test_an_unknown_handle_returns_the_known_ones():
    coordinator, legal = pair(a.tool_call("legal", input="Review.", artifacts=["contract"]))

    result = await a.run(coordinator, "Review the clause.", artifacts={"clause": CLAUSE})

    assert result.ok, result.error
    assert coordinator.model.requests[1].tool_results == [
        "ERROR: unknown document handle 'contract'. Known handles: input, clause."
    ]
    assert legal.model.requests == []  # the sub-agent never started without its document
    (span,) = [s for s in result.spans if s.kind == "tool_call"]
    assert span.status == "error"


async def test_a_call_without_artifacts_passes_only_its_input():
    coordinator, legal = pair(a.tool_call("legal", input="Assess the clause above."))

    await a.run(coordinator, "Review the clause.", artifacts={"clause": CLAUSE})

    # trap 2 of the article: without a handle the sub-agent has only the sentence
    assert legal.model.requests[0].last_user_text == "Assess the clause above."


@pytest.mark.parametrize(
    ("artifacts", "message"),
    [
        ("the clause text", "artifacts must be a dict of handle -> text"),
        ({"clause": 42}, "artifacts must be a dict of handle -> text"),
        ({1: "text"}, "artifacts must be a dict of handle -> text"),
        ({"input": "text"}, "'input' is reserved"),
    ],
)
async def test_bad_artifacts_raise_user_error_before_the_run(artifacts, message):
    coordinator, _ = pair(a.tool_call("legal", input="x"))

    with pytest.raises(a.UserError, match=message):
        await a.run(coordinator, "x", artifacts=artifacts)
    with pytest.raises(a.UserError, match=message):
        a.run_sync(coordinator, "x", artifacts=artifacts)
    assert coordinator.model.requests == []


# -- which handles a sub-agent's tool offers: what the caller's model is shown, run by run


def _shown(request: a.ModelRequest, name: str) -> dict:
    (spec,) = [t for t in request.tools if t.name == name]
    return spec.parameters


async def test_with_only_the_input_the_tool_offers_no_handles():
    coordinator, _ = pair(a.tool_call("legal", input=CLAUSE))

    result = await a.run(coordinator, CLAUSE)

    assert result.ok, result.error
    for request in coordinator.model.requests:  # both turns: nothing to route, no parameter
        assert set(_shown(request, "legal")["properties"]) == {"input"}


async def test_the_handles_offered_are_an_enum_of_the_runs_documents():
    coordinator, _ = pair(a.tool_call("legal", input="Review.", artifacts=["clause"]))

    await a.run(coordinator, "Review the attached.", artifacts={"clause": CLAUSE, "annex": ANNEX})

    offered = _shown(coordinator.model.requests[0], "legal")["properties"]["artifacts"]
    assert offered["items"] == {"type": "string", "enum": ["clause", "annex"]}


async def test_by_handle_offers_the_input_itself():
    legal = a.Agent("legal", "Legal review.", a.ScriptedModel(["needs changes"]))
    step = a.tool_call("legal", input="Review.", artifacts=["input"])
    coordinator = a.Agent(
        "coordinator", "Ask.", a.ScriptedModel([step, "Done."]), [legal.as_tool(by_handle=True)]
    )

    result = await a.run(coordinator, CLAUSE)

    assert result.ok, result.error
    offered = _shown(coordinator.model.requests[0], "legal")["properties"]["artifacts"]
    assert offered["items"]["enum"] == ["input"]
    assert legal.model.requests[0].last_user_text.endswith(CLAUSE)


async def test_a_team_offers_the_runs_documents_too():
    legal = a.Agent("legal", "Legal review.", a.ScriptedModel(["needs changes"]))
    step = a.tool_call("consult", member="legal", input="Review.", artifacts=["clause"])
    coordinator = a.Agent("c", "Ask.", a.ScriptedModel([step, "Done."]), [a.team([legal])])

    await a.run(coordinator, "Review the attached.", artifacts={"clause": CLAUSE})

    shown = _shown(coordinator.model.requests[0], "consult")["properties"]
    assert shown["artifacts"]["items"]["enum"] == ["clause"]
    assert legal.model.requests[0].last_user_text.endswith(CLAUSE)


async def test_the_tool_spec_size_in_the_calls_table_is_what_was_sent():
    import json

    def spec_chars(request: a.ModelRequest) -> int:
        (spec,) = request.tools
        return len(json.dumps(spec.as_dict(), ensure_ascii=False, separators=(",", ":")))

    with_document, _ = pair(a.tool_call("legal", input="Review.", artifacts=["clause"]))
    attached = await a.run(with_document, "Review.", artifacts={"clause": CLAUSE})
    input_only, _ = pair(a.tool_call("legal", input="Review."))
    plain = await a.run(input_only, "Review.")

    grown = attached.calls["chars_in_tools"].iloc[0] - plain.calls["chars_in_tools"].iloc[0]
    sent = spec_chars(with_document.model.requests[0]) - spec_chars(input_only.model.requests[0])
    assert grown == sent > len('"artifacts"')


def test_by_handle_must_be_none_true_or_false():
    legal = a.Agent("legal", "Legal review.", a.ScriptedModel([]))
    with pytest.raises(a.UserError, match=r"by_handle=.*got 'yes'"):
        legal.as_tool(by_handle="yes")
    with pytest.raises(a.UserError, match="by_handle"):
        a.team([legal], by_handle=1)
