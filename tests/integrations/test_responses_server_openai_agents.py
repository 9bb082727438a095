"""`ResponsesServer` answers a second client as it answers agentnb's: openai-agents, whose
default API is the Responses API, runs against it offline, and chains runs on its state."""

from __future__ import annotations

import pytest

pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI  # noqa: E402

import agentnb as a  # noqa: E402
from agentnb.models.providers.openai_responses.server import ResponsesServer  # noqa: E402

set_tracing_disabled(True)


@function_tool
def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


async def test_openai_agents_runs_and_continues_a_stored_response():
    script = a.ScriptedModel([a.tool_call("add", x=2, y=3), a.say("5"), a.say("Still 5.")])
    with ResponsesServer(script) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="sk-test")
        model = OpenAIResponsesModel("gpt-4o-mini", client)
        agent = Agent("calc", instructions="You add.", tools=[add], model=model)
        first = await Runner.run(agent, "2+3?")
        second = await Runner.run(
            agent, "Are you sure?", previous_response_id=first.last_response_id
        )
        await client.close()

    assert (first.final_output, second.final_output) == ("5", "Still 5.")
    last = server.received[-1]
    assert last["previous_response_id"] == "resp_0002"
    assert last["input"] == [{"content": "Are you sure?", "role": "user"}]
    seen = script.requests[-1]  # the whole conversation, rebuilt from the stored response
    assert [m.role for m in seen.messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert seen.system == "You add." and [t.name for t in seen.tools] == ["add"]
