"""Memory strategies of a `Session`: what of a long conversation each run is sent.

``Session(keep_last=n)`` drops the older turns; ``Session(summarize=SummarizeOlder(model,
keep_last=n))`` keeps the last n turns as they were and replaces the older ones by a summary
that a model writes. The summary is rolling: when turns fall out of the last n, the run first
asks the summariser for a new summary of the summary so far and of those turns (one call, or
more for a summariser with tools), then sends the new summary and the last n turns. The
summariser runs inside the run (its spans under the run's, its calls rows of the run's calls
table at path ``<agent>/<summariser>``, covered by the run's limits) and is counted apart:
its agent span carries ``session_summary=True``, which `agentnb.conversation_cost` reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import checks
from ...models.types import Message

SUMMARY_INSTRUCTIONS = (
    "You keep the memory of a conversation. You are given the summary so far (if any) and "
    "the turns that follow it. Write the new summary: every fact, name, number, decision and "
    "open question a later turn may need, in plain sentences, as briefly as they allow."
)

SUMMARY_HEADING = "[Summary of the conversation before the turns below]"
"""How the summary starts in the message a run is sent (one user message, before the kept turns)."""


@dataclass(frozen=True, eq=False)
class SummarizeOlder:
    """Summarise the turns older than the last ``keep_last`` with ``model`` (a model client, a
    spec string such as ``"openai:gpt-4o-mini"``, or an `agentnb.Agent` of your own), as
    ``Session(summarize=SummarizeOlder(model, keep_last=4))``.

    ``instructions`` and ``name`` make the summariser's agent when ``model`` is not one
    already (its calls are the rows of path ``<agent>/<name>``)."""

    model: Any
    keep_last: int = 4
    """The turns sent as they were; the older ones are sent as one summary."""
    instructions: str = SUMMARY_INSTRUCTIONS
    name: str = "summarizer"

    def __post_init__(self) -> None:
        model = self.model
        usable = (
            isinstance(model, str)
            or callable(getattr(model, "request", None))  # a model client
            or callable(getattr(model, "as_tool", None))  # an agentnb.Agent
        )
        if isinstance(model, type) or not usable:
            raise checks.fail(
                "SummarizeOlder(model)",
                "a model client, a model spec string or an agentnb.Agent",
                model,
            )
        checks.positive_int(self.keep_last, "SummarizeOlder(keep_last=...)", optional=False)
        checks.text(self.instructions, "SummarizeOlder(instructions=...)", empty=False)
        checks.text(self.name, "SummarizeOlder(name=...)", empty=False)


@dataclass(frozen=True)
class Fold:
    """What a run on a summarising session must summarise before it starts."""

    strategy: SummarizeOlder
    summary: str | None
    """The summary so far (of the turns before ``turns``), if any."""
    turns: list[list[Message]]
    """The turns that fell out of the last ``keep_last`` since that summary."""
    covered: int
    """How many turns, from the first, the new summary covers."""
    kept: list[Message]
    """The last ``keep_last`` turns' messages, sent after the new summary."""

    def prompt(self) -> str:
        """The summariser's input: the summary so far, then the turns to fold in, as text."""
        lines = [f"Summary so far:\n{self.summary}" if self.summary else "Summary so far: none."]
        lines.append("Turns to add to it:")
        for turn in self.turns:
            for message in turn:
                lines.append(f"{message.role}: {_text(message)}")
        return "\n".join(lines)


def summary_message(summary: str) -> Message:
    """The message that stands for the summarised turns in what a run is sent."""
    return Message.user(f"{SUMMARY_HEADING}\n{summary}")


def _text(message: Message) -> str:
    parts = [message.content] if message.content else []
    parts += [f"[calls {c.name}({c.arguments})]" for c in message.tool_calls]
    return " ".join(parts) or "(empty)"
