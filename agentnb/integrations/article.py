"""The reference article's cost listing, rebuilt on openai-agents itself (offline, no key).

The article measured what a coordinator with k reviewers (sub-agents through ``Agent.as_tool``)
sends, against a generalist that reads the clause once, with a fake model written against the
SDK's ``Model`` interface. `ArticleModel` is such a model: it answers from a script with the
article's item ids (``msg_fake`` for messages; ``fc_<n>``/``call_<n>`` for tool calls, ``n``
counting across the runs made with one counter). `cost_table` runs the generalist, then k = 1,
2, 3, 5, under `openai_agents.capture`; with ``count="article"`` it gives the article's
published figures exactly (1,119 characters, then 4.9x, 7.7x, 10.6x, 16.3x).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from agents import Agent, Runner, Tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from .openai_agents import Count, capture

if TYPE_CHECKING:
    import pandas as pd

CLAUSE = (
    "The supplier guarantees 100% availability of the service "
    "and undertakes to refund the entire annual fee "
    "for any interruption longer than one minute. "
) * 7
"""The article's clause, its sentence seven times: 1,043 characters."""

OPINION = "verdict='needs_changes' reason='" + "x" * 200 + "' quote='..."
"""Each reviewer's scripted answer in the cost listing (243 characters)."""

GENERALIST = "You assess the clause from every profile."
REVIEWER = "You assess the clause from your profile and quote the text you rely on."
COORDINATOR = "Consult all the reviewers and synthesise."
TOOL_DESCRIPTION = "Opinion on a clause. Pass the full text."
KS = (1, 2, 3, 5)

Step = str | Sequence[tuple[str, dict[str, Any]]]
"""A text to answer, or the tool calls ``(name, arguments)`` of one turn."""


class ArticleModel(Model):
    """A scripted openai-agents model that answers as the article's fake model did."""

    def __init__(self, script: Sequence[Step], ids: Iterator[int]) -> None:
        self.script = list(script)
        self.ids = ids
        self.calls: list[dict[str, Any]] = []
        """What it was handed on each call: instructions, input items, tool names."""

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.calls.append(
            {
                "instructions": system_instructions,
                "input": input,
                "tools": [t.name for t in tools],
            }
        )
        step = self.script.pop(0)
        output: list[Any]
        if isinstance(step, str):
            text = ResponseOutputText(type="output_text", text=step, annotations=[])
            output = [
                ResponseOutputMessage(
                    id="msg_fake",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[text],
                )
            ]
        else:
            output = []
            for name, arguments in step:
                n = next(self.ids)
                output.append(
                    ResponseFunctionToolCall(
                        type="function_call",
                        id=f"fc_{n}",
                        call_id=f"call_{n}",
                        name=name,
                        arguments=json.dumps(arguments),
                    )
                )
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ArticleModel answers get_response only, as the article's did")


def generalist(ids: Iterator[int]) -> Agent[Any]:
    """The baseline: one agent that reads the clause once and answers."""
    return Agent(
        name="Generalist", instructions=GENERALIST, model=ArticleModel(["Synthesis."], ids)
    )


def coordinator(k: int, ids: Iterator[int]) -> Agent[Any]:
    """A coordinator that passes the clause to k reviewers in one turn, then synthesises."""
    reviewers = [
        Agent(name=f"Reviewer {i}", instructions=REVIEWER, model=ArticleModel([OPINION], ids))
        for i in range(k)
    ]
    tools: list[Tool] = [
        r.as_tool(tool_name=f"opinion_{i}", tool_description=TOOL_DESCRIPTION)
        for i, r in enumerate(reviewers)
    ]
    calls = [(f"opinion_{i}", {"input": CLAUSE}) for i in range(k)]
    model = ArticleModel([calls, "Synthesis."], ids)
    return Agent(name="Coordinator", instructions=COORDINATOR, tools=tools, model=model)


async def cost_table(count: Count = "article", ks: Sequence[int] = KS) -> pd.DataFrame:
    """Run the generalist and each coordinator under `capture`; characters sent per setup.

    Columns: ``setup``, ``k``, ``chars_in`` (the whole run, every agent), ``multiplier``
    (against the generalist), ``run_id``. The tool-call ids count on across the runs, as in
    the article's process.
    """
    import pandas as pd

    ids = itertools.count()
    rows = []
    for k in (0, *ks):
        agent = generalist(ids) if k == 0 else coordinator(k, ids)
        with capture(count) as cap:
            await Runner.run(agent, CLAUSE)
        run = cap.runs[0]
        rows.append({"setup": agent.name, "k": k, "chars_in": run.chars_in, "run_id": run.run_id})
    table = pd.DataFrame(rows)
    table["multiplier"] = table["chars_in"] / table["chars_in"].iloc[0]
    return table[["setup", "k", "chars_in", "multiplier", "run_id"]]
