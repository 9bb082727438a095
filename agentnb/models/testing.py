"""`TestModel`: a model for tests that needs no script (pydantic-ai's ``TestModel``).

Its first reply to an agent calls each of the agent's tools once, with arguments generated
from the tool's JSON schema (`agentnb.models.schema_values`, seeded: the same arguments on
every run); its next reply answers: a value valid for the output schema when the agent has an
``output_type``, else text. It records every request, so a test can assert on what the agent
sent. Handoff tools (``transfer_to_...``) are not called: a test of a handoff scripts it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from .. import checks
from ..errors import UserError
from ..words import plural
from .schema_values import schema_value
from .types import Message, ModelRequest, ModelResponse, ToolCall

HANDOFF_PREFIX = "transfer_to_"


class TestModel:
    """A model that calls every tool once, then answers in the output type; see the module."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(
        self,
        *,
        seed: int = 0,
        call_tools: Sequence[str] | Literal["all"] = "all",
        text: str | None = None,
        output: Any = None,
        name: str = "test",
    ) -> None:
        """``seed`` varies the generated arguments and outputs; ``call_tools`` names the
        tools to call (default: all but handoffs); ``text`` is the final text answer (default:
        the tools' results as JSON, or ``"success (no tool calls)"``); ``output`` the final
        structured answer (default: generated from the output schema)."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise checks.fail("TestModel(seed=...)", "an int", seed)
        if call_tools != "all" and (
            not isinstance(call_tools, (list, tuple))
            or not all(isinstance(n, str) for n in call_tools)
        ):
            raise checks.fail(
                "TestModel(call_tools=...)", "'all' or a list of tool names", call_tools
            )
        checks.text(text, "TestModel(text=...)", optional=True)
        checks.text(name, "TestModel(name=...)", empty=False)
        self.seed = seed
        self.call_tools = call_tools if call_tools == "all" else tuple(call_tools)
        self.text = text
        self.output = output
        self.name = name
        self.requests: list[ModelRequest] = []

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        turn = _since_last_input(request.messages)
        if not any(m.role == "tool" for m in turn):
            calls = self._calls(request)
            if calls:
                return ModelResponse(None, calls, stop_reason="tool_calls")
        if request.output_schema is not None:
            value = self.output
            if value is None:
                value = schema_value(request.output_schema.schema, f"{self.seed}:output")
            elif hasattr(value, "model_dump"):
                value = value.model_dump(mode="json")
            return ModelResponse(json.dumps(value, ensure_ascii=False))
        if self.text is not None:
            return ModelResponse(self.text)
        results = {m.name or "tool": m.content for m in turn if m.role == "tool"}
        return ModelResponse(json.dumps(results) if results else "success (no tool calls)")

    def _calls(self, request: ModelRequest) -> list[ToolCall]:
        offered = {t.name: t for t in request.tools}
        if self.call_tools == "all":
            names = [n for n in offered if not n.startswith(HANDOFF_PREFIX)]
        else:
            missing = [n for n in self.call_tools if n not in offered]
            if missing:
                raise UserError(
                    f"TestModel(call_tools=...) names {', '.join(map(repr, missing))}, which "
                    f"{request.agent or 'the agent'} does not offer; it offers "
                    f"{', '.join(offered) or 'no tools'}."
                )
            names = list(self.call_tools)
        return [
            ToolCall(
                name,
                json.dumps(schema_value(offered[name].parameters, f"{self.seed}:{name}")),
                f"test_call_{i}",
            )
            for i, name in enumerate(names)
        ]

    def __repr__(self) -> str:
        return f"TestModel(seed={self.seed}, received {plural(len(self.requests), 'request')})"


def _since_last_input(messages: list[Message]) -> list[Message]:
    """The messages after the last user message that is not a re-ask the runtime wrote."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user" and not messages[i].generated:
            return messages[i + 1 :]
    return list(messages)
