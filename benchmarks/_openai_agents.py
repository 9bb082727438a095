"""The same workloads on openai-agents, for a side-by-side comparison (optional).

openai-agents is not a dependency of agentnb: ``pip install openai-agents`` to include it.
Its scripted model is the least an ``agents.Model`` can be — it returns ready output items
from a list and records nothing — and its tracing is disabled, so the figure is the SDK's
own overhead, with no tracing cost (agentnb's figure includes its trace).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ._cases import OPINION, REVIEWERS, TASK, TOOL_TURNS, Case


def available() -> bool:
    try:
        import agents  # noqa: F401
    except Exception:
        return False
    return True


def _build() -> dict[str, Any]:
    """Import openai-agents and define the scripted model (only when it is installed)."""
    from agents import (
        Agent,
        Model,
        ModelResponse,
        RunConfig,
        Runner,
        Usage,
        function_tool,
        set_tracing_disabled,
    )
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)
    config = RunConfig(tracing_disabled=True)

    def say(text: str) -> Callable[[int], list[Any]]:
        def items(_: int) -> list[Any]:
            content = ResponseOutputText(type="output_text", text=text, annotations=[])
            return [
                ResponseOutputMessage(
                    id="msg",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[content],
                )
            ]

        return items

    def calls(*pairs: tuple[str, dict[str, Any]]) -> Callable[[int], list[Any]]:
        def items(turn: int) -> list[Any]:
            return [
                ResponseFunctionToolCall(
                    id=f"fc_{turn}_{i}",
                    call_id=f"call_{turn}_{i}",
                    type="function_call",
                    name=name,
                    arguments=json.dumps(args),
                )
                for i, (name, args) in enumerate(pairs)
            ]

        return items

    class ScriptedModel(Model):
        def __init__(self, steps: list[Callable[[int], list[Any]]]) -> None:
            self.steps = steps
            self.index = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            step = self.steps[self.index]
            self.index += 1
            return ModelResponse(output=step(self.index), usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark does not stream")

    return {
        "Agent": Agent,
        "Runner": Runner,
        "config": config,
        "function_tool": function_tool,
        "ScriptedModel": ScriptedModel,
        "say": say,
        "calls": calls,
    }


def _rewind(models: list[Any]) -> Callable[[], None]:
    def reset() -> None:
        for model in models:
            model.index = 0

    return reset


def _expect(output: str) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        if result.final_output != output:
            raise RuntimeError(f"openai-agents benchmark run went wrong: {result.final_output!r}")

    return check


def single(tool_turns: int = TOOL_TURNS) -> Case:
    oa = _build()

    async def lookup(key: str) -> str:
        """Look a key up in the reference table."""
        return f"value of {key}"

    steps = [oa["calls"](("lookup", {"key": f"k{i}"})) for i in range(tool_turns)]
    model = oa["ScriptedModel"]([*steps, oa["say"]("done")])
    agent = oa["Agent"](
        name="analyst",
        instructions="Look up what you need, then answer.",
        model=model,
        tools=[oa["function_tool"](lookup)],
    )
    return Case(
        "single agent, tool loop",
        "openai-agents",
        tool_turns + 1,
        lambda: oa["Runner"].run(agent, TASK, run_config=oa["config"]),
        _rewind([model]),
        _expect("done"),
    )


def hierarchy(reviewers: int = REVIEWERS) -> Case:
    oa = _build()
    models = [oa["ScriptedModel"]([oa["say"](OPINION)]) for _ in range(reviewers)]
    tools = [
        oa["Agent"](
            name=f"reviewer_{i}", instructions="Assess the clause from your profile.", model=m
        ).as_tool(tool_name=f"reviewer_{i}", tool_description="Opinion on a clause.")
        for i, m in enumerate(models)
    ]
    coord_model = oa["ScriptedModel"](
        [
            oa["calls"](*((f"reviewer_{i}", {"input": TASK}) for i in range(reviewers))),
            oa["say"]("synthesis"),
        ]
    )
    coordinator = oa["Agent"](
        name="coordinator",
        instructions="Consult every reviewer, then synthesise.",
        model=coord_model,
        tools=tools,
    )
    return Case(
        f"hierarchy, {reviewers} sub-agents",
        "openai-agents",
        reviewers + 2,
        lambda: oa["Runner"].run(coordinator, TASK, run_config=oa["config"]),
        _rewind([coord_model, *models]),
        _expect("synthesis"),
    )
