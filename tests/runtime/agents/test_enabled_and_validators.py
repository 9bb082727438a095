"""Tools enabled per run (is_enabled on tools, agents as tools and handoffs) and output
validators that make the model try again with ModelRetry."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import agentnb as a


def offered(request: a.ModelRequest) -> list[str]:
    return [spec.name for spec in request.tools]


def test_is_enabled_as_a_bool_and_as_a_function_of_the_run_s_context():
    @a.tool(is_enabled=lambda ctx, agent: ctx.deps == "admin")
    def delete(item: str) -> str:
        """Delete an item."""
        return "deleted"

    @a.tool(is_enabled=False)
    def hidden(item: str) -> str:
        """Never offered."""
        return "?"

    @a.tool
    def read(item: str) -> str:
        """Read an item."""
        return "content"

    asked: list[str] = []

    async def helper_enabled(ctx, agent) -> bool:  # async works too, told which agent starts
        asked.append(agent.name)
        return True

    helper = a.Agent("helper", "x", a.ScriptedModel([a.say("helped")]))
    billing = a.Agent("billing", "x", a.ScriptedModel([a.say("x")]))
    tools = [delete, hidden, read, helper.as_tool(is_enabled=helper_enabled)]
    handoffs = [a.Handoff(billing, is_enabled=lambda ctx, agent: ctx.deps == "admin")]

    user_model = a.ScriptedModel([a.say("ok")])
    assert a.run_sync(a.Agent("lead", "x", user_model, tools, handoffs=handoffs), "go").ok
    admin_model = a.ScriptedModel([a.say("ok")])
    admin = a.Agent("lead", "x", admin_model, tools, handoffs=handoffs)
    assert a.run_sync(admin, "go", deps="admin").ok

    assert offered(user_model.requests[0]) == ["read", "helper"]
    assert offered(admin_model.requests[0]) == ["delete", "read", "helper", "transfer_to_billing"]
    assert asked == ["lead", "lead"]


def test_a_call_to_a_tool_not_enabled_is_answered_as_an_unknown_tool():
    @a.tool(is_enabled=False)
    def secret() -> str:
        """Secret."""
        return "the secret"

    model = a.ScriptedModel([a.tool_call("secret"), a.say("no")])

    result = a.run_sync(a.Agent("w", "x", model, [secret]), "go")

    assert result.ok
    assert model.requests[1].tool_results[0].startswith("ERROR: there is no tool named")


def test_is_enabled_of_the_wrong_kind_or_shape_is_a_user_error():
    def f(x: str) -> str:
        """F."""
        return x

    with pytest.raises(a.UserError, match="is_enabled"):
        a.tool(is_enabled="yes")(f)
    with pytest.raises(a.UserError, match=r"is_enabled.*\(ctx, agent\)"):
        a.tool(is_enabled=lambda ctx: True)(f)
    with pytest.raises(a.UserError, match="is_enabled"):
        a.Agent("w", "x", a.ScriptedModel([])).as_tool(is_enabled=lambda: True)


class Quote(BaseModel):
    price: int


def test_an_output_validator_s_model_retry_makes_the_model_try_again():
    def positive(ctx, quote: Quote) -> Quote:
        if quote.price <= 0:
            raise a.ModelRetry("The price must be positive; quote again.")
        return Quote(price=quote.price * 100)  # a validator may change the output

    model = a.ScriptedModel([a.say('{"price": -5}'), a.say('{"price": 12}')])
    agent = a.Agent("quoter", "x", model, output_type=Quote, output_validators=[positive])

    result = a.run_sync(agent, "quote")

    assert result.ok and result.output == Quote(price=1200)
    told = model.requests[1].messages[-1]
    assert (told.role, told.content) == ("user", "The price must be positive; quote again.")
    assert told.generated
    retries = [line for line in result.log_lines() if '"output_retry"' in line]
    assert len(retries) == 1 and "must be positive" in retries[0]
    agent_span = next(s for s in result.spans if s.kind == "agent")
    assert agent_span.attrs["output_retries"] == 1


async def test_retries_are_bounded_by_output_retries():
    async def never(ctx, text: str) -> str:
        raise a.ModelRetry(f"not good enough: {text}")

    model = a.ScriptedModel([a.say("one"), a.say("two"), a.say("three")])
    agent = a.Agent("w", "x", model, output_validators=[never], output_retries=1)

    result = await a.run(agent, "go")

    assert not result.ok and isinstance(result.error, a.OutputValidationError)
    assert "not good enough: two" in str(result.error)
    assert len(model.requests) == 2


def test_output_validators_must_take_ctx_and_output():
    with pytest.raises(a.UserError, match=r"output_validators.*\(ctx, output\)"):
        a.Agent("w", "x", a.ScriptedModel([]), output_validators=[lambda output: output])
