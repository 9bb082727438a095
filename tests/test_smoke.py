import agentnb as a


def test_agent_with_a_tool_runs_and_the_model_sees_the_result():
    @a.tool
    def add(x: int, y: int) -> int:
        """Add two integers."""
        return x + y

    model = a.ScriptedModel([a.tool_call("add", x=2, y=3), a.say("5")])
    result = a.run_sync(a.Agent("calc", "You add.", model, [add]), "2+3?")

    assert result.ok and result.output == "5"
    assert model.requests[1].tool_results == ["5"]
    assert list(result.calls["turn"]) == [1, 2]
