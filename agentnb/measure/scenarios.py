"""The reference article's scenarios, rebuilt on scripted models: offline, deterministic, no key.

Every builder makes fresh agents on each call (a scripted model records what it receives and a
`ScriptedModel` consumes its script), so two runs of a scenario never share state, and sweeps,
tables, plots, notebooks and ``python -m agentnb reproduce`` can call these functions as often
as they like. Functions that run something are coroutine functions (``await`` them in a
notebook cell; ``agentnb.run_sync(review_hierarchy(3, "handle"))`` in a script); all of them are
module-level, so a process-based sweep executor can pickle them.

The scenarios:

- **Contract-review cost** (`cost_scenario`, `review_hierarchy`, `generalist`): a generalist
  reads a 1,043-character clause once; a coordinator asks ``k`` reviewers (sub-agents as tools)
  for an opinion of 244 characters each, all in one turn, then synthesises. Three ways for the
  clause to reach the reviewers (``COST_MODES``):

  * ``"inline"`` — the article's setup: the clause is the run's input and the coordinator pastes
    it as each tool call's ``input`` (it generates the clause k times, then rereads those
    arguments on its second turn);
  * ``"handle"`` — the clause is the run's input and the coordinator forwards it by the handle
    ``input`` (``artifacts=["input"]``): it writes a one-line task, the runtime attaches the text;
  * ``"attached"`` — ``run(coordinator, "Review the attached clause.", artifacts={"clause":
    CLAUSE})``: the coordinator routes the handle ``clause`` without ever reading the clause;
  * ``"team"`` — attached as above, with the reviewers behind one `agentnb.team` tool (one
    tool spec whose ``member`` enum names them) instead of one tool each.

  In every mode each reviewer's request holds the full clause. ``k=0`` is the baseline: the
  generalist alone (the same run for every mode: it reads the clause once).
- **Parallel review team** (`review_team`, `review_coordinator`): legal, tax and technical
  reviewers answering a structured `Opinion` after a configurable latency; their verdicts are
  needs_changes, acceptable and unacceptable, so the harshest by `SEVERITY` is unacceptable.
- **Depth guard** (`recursion_pair`): legal has tax as a tool and tax has legal: a cycle that
  only `agentnb.Limits(max_depth=...)` and the path guard stop.
- **Writer-verifier** (`writer_and_verifier`): a 15-word first draft rejected by a word-count
  verifier ("15 words, the limit is 12"), an 8-word rewrite approved.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..errors import UserError
from ..models.scripted import FunctionModel, ScriptedModel, Step, say, tool_call
from ..models.types import ModelRequest
from ..runtime import Agent, RunResult, run, team

# -- the contract-review cost scenario ---------------------------------------------------------

CLAUSE = (
    "The supplier guarantees 100% availability of the service "
    "and undertakes to refund the entire annual fee "
    "for any interruption longer than one minute. "
) * 7
"""The clause under review: the article's sentence seven times, 1,043 characters."""

OPINION = (
    "needs_changes: a 100% availability promise is an obligation of result no supplier can "
    "keep, and repaying the whole annual fee for a one-minute outage is out of all "
    "proportion. Replace it with a measured service level and capped service credits."
)
"""One reviewer's opinion in the cost scenario: 244 characters of plain text, the size the
article used (its opinions were about 244 characters)."""

COST_KS = (1, 2, 3, 5)
"""The numbers of sub-agents the article measured."""

COST_MODES = ("inline", "handle", "attached", "team")
"""How the clause reaches the reviewers; see the module docstring."""

CostMode = Literal["inline", "handle", "attached", "team"]

REVIEW_TASK = "Review the clause."
"""What the coordinator writes as each tool call's ``input`` when it passes the clause by handle."""

ATTACHED_INPUT = "Review the attached clause."
"""The run's input in the ``"attached"`` mode (the clause travels as the artifact ``clause``)."""

_GENERALIST = "Review the clause from every profile."
_REVIEWER = "Review the clause from your own profile and quote the words you rely on."
_COORDINATOR = "Ask every reviewer, then synthesise."
_OPINION_TOOL = "Opinion on a clause."
_TEAM = "reviewers"


@dataclass(frozen=True)
class Scenario:
    """A ready-to-run setup: the root agent, its input and the documents attached to the run."""

    agent: Agent
    input: str
    artifacts: dict[str, str] | None = None

    async def run(self, **options: Any) -> RunResult:
        """Run it; ``options`` go to `agentnb.run` (``limits=``, ``timeout=``, ...)."""
        return await run(self.agent, self.input, artifacts=self.artifacts, **options)


def cost_scenario(
    k: int, mode: CostMode = "inline", latency: float = 0.0, clause: str = CLAUSE
) -> Scenario:
    """The contract-review setup with ``k`` reviewers (``k=0``: the generalist baseline).

    ``latency`` is the seconds every model (coordinator and reviewers) waits before answering,
    to stand in for a network call; it changes timings only, never sizes. ``clause``: the
    document reviewed (the article's `CLAUSE`; a longer one scales the scenario up).
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise UserError(f"k must be the number of reviewers, an integer >= 0, got {k!r}")
    if mode not in COST_MODES:
        raise UserError(f"mode must be one of {', '.join(map(repr, COST_MODES))}, got {mode!r}")
    if k == 0:
        model = ScriptedModel([say("Synthesis.")], latency, name="generalist")
        return Scenario(Agent("generalist", _GENERALIST, model), clause)
    reviewers = [
        Agent(f"reviewer_{i}", _REVIEWER, ScriptedModel([say(OPINION)], latency, name="reviewer"))
        for i in range(1, k + 1)
    ]
    by_handle = True if mode == "handle" else None  # handle: the input is offered by its handle
    tools = [
        r.as_tool(f"opinion_{i}", _OPINION_TOOL, by_handle=by_handle)
        for i, r in enumerate(reviewers, 1)
    ]
    if mode == "inline":
        calls = [tool_call(t.name, input=clause) for t in tools]
    elif mode == "team":
        calls = [
            tool_call(_TEAM, member=t.name, input=REVIEW_TASK, artifacts=["clause"]) for t in tools
        ]
    else:
        handle = "input" if mode == "handle" else "clause"
        calls = [tool_call(t.name, input=REVIEW_TASK, artifacts=[handle]) for t in tools]
    script: list[Step] = [calls, say(f"Synthesis of {k} opinions.")]
    shape = [team(tools, name=_TEAM)] if mode == "team" else tools
    coordinator = Agent(
        "coordinator", _COORDINATOR, ScriptedModel(script, latency, name="coordinator"), shape
    )
    if mode in ("attached", "team"):
        return Scenario(coordinator, ATTACHED_INPUT, {"clause": clause})
    return Scenario(coordinator, clause)


async def review_hierarchy(
    k: int, mode: CostMode = "inline", latency: float = 0.0, clause: str = CLAUSE
) -> RunResult:
    """Run the contract-review hierarchy with ``k`` reviewers; see `cost_scenario`.

    ``result.chars_in`` is the characters sent over the whole run; ``result.calls`` has one row
    per model call (the coordinator's two turns and one per reviewer) with the per-component split.
    The reviewers are reachable as ``result.last_agent.tool_map()["opinion_1"].agent``.
    """
    return await cost_scenario(k, mode, latency, clause).run()


async def generalist(latency: float = 0.0, clause: str = CLAUSE) -> RunResult:
    """The baseline of the cost tables: one agent reads the clause once and answers."""
    return await cost_scenario(0, latency=latency, clause=clause).run()


# -- the parallel review team --------------------------------------------------------------------

SEVERITY = ("acceptable", "needs_changes", "unacceptable")
"""Verdicts from mildest to harshest: ``harshest(..., order=SEVERITY)`` picks the overall one."""

Verdict = Literal["acceptable", "needs_changes", "unacceptable"]


class Opinion(BaseModel):
    """A reviewer's structured opinion: the quote makes it checkable against the clause."""

    verdict: Verdict
    reason: str = Field(max_length=400)
    quote: str = Field(description="The exact words of the clause the opinion relies on.")


REVIEWERS: dict[str, tuple[Verdict, str]] = {
    "legal": ("needs_changes", "An absolute availability promise is an obligation of result."),
    "tax": ("acceptable", "Outside my scope."),
    "technical": ("unacceptable", "No real service is available 100% of the time."),
}
"""Each reviewer's scripted verdict and reason, in the team's order."""

_PROFILES = {
    "legal": "civil-law obligations and liability",
    "tax": "tax and invoicing implications",
    "technical": "the technical feasibility of the commitments",
}


def review_team(latencies: Mapping[str, float] | None = None) -> dict[str, Agent]:
    """The legal, tax and technical reviewers, in that order, each answering an `Opinion`.

    ``latencies`` maps a reviewer's name to the seconds its model takes (missing names: 0), e.g.
    ``{"technical": 5.0}`` for a reviewer slower than a fan-out's timeout. Each reviewer quotes
    the first words of the document it received, so a reviewer run without the clause shows it.
    """
    latencies = dict(latencies or {})
    unknown = set(latencies) - set(REVIEWERS)
    if unknown:
        raise UserError(
            f"review_team(latencies=...) has unknown reviewer(s) {sorted(unknown)}; "
            f"the team is {list(REVIEWERS)}"
        )
    team = {}
    for name, (verdict, reason) in REVIEWERS.items():
        model = FunctionModel(_opinion_reply(verdict, reason), latencies.get(name, 0.0), name=name)
        instructions = (
            f"You review contract clauses for {_PROFILES[name]}. Quote the words you rely on. "
            "If the clause is outside your profile, the verdict is acceptable."
        )
        team[name] = Agent(
            name,
            instructions,
            model,
            output_type=Opinion,
            description=f"{name.capitalize()} opinion on a clause.",
        )
    return team


def _opinion_reply(verdict: Verdict, reason: str) -> Any:
    def reply(request: ModelRequest) -> Any:
        text = request.last_user_text
        document = _document_in(text)
        quote = (document if document is not None else text)[:40]
        return say(Opinion(verdict=verdict, reason=reason, quote=quote))

    return reply


_DOCUMENT = re.compile(r"\n\n## Document: [^\n]*\n")


def _document_in(text: str) -> str | None:
    """The last document attached to a message (see `agentnb.AgentTool`), or None."""
    parts = _DOCUMENT.split(text)
    return parts[-1] if len(parts) > 1 else None


def review_coordinator(
    latencies: Mapping[str, float] | None = None, *, timeout: float | None = None
) -> Agent:
    """The article's first hierarchy: a coordinator with the team as tools (see `review_team`).

    Its model asks all three reviewers in one turn, passing the run's input by handle, then
    synthesises from what came back: each verdict, and the harshest one by `SEVERITY` as the
    overall verdict; a reviewer that did not answer (``timeout`` on each tool) is named as
    missing instead of being left out silently.
    """
    team = review_team(latencies)
    tools = [agent.as_tool(timeout=timeout, by_handle=True) for agent in team.values()]

    def reply(request: ModelRequest) -> Any:
        if not request.tool_results:
            return [tool_call(name, input=REVIEW_TASK, artifacts=["input"]) for name in team]
        return say(_synthesis(list(team), request.tool_results))

    model = FunctionModel(reply, name="coordinator")
    instructions = (
        "Ask ALL three reviewers, always. Report each verdict; the overall verdict is the "
        "harshest. Add no opinion of your own."
    )
    return Agent("coordinator", instructions, model, tools)


def _synthesis(names: list[str], results: list[str]) -> str:
    verdicts, missing = {}, []
    for name, text in zip(names, results):
        try:
            verdicts[name] = json.loads(text)["verdict"]
        except (ValueError, KeyError, TypeError):
            missing.append(name)
    listed = ", ".join(f"{n} {v}" for n, v in verdicts.items())
    if missing:
        return f"Verdicts: {listed}. Missing: {', '.join(missing)}; no overall verdict."
    overall = max(verdicts.values(), key=SEVERITY.index)
    return f"Verdicts: {listed}. Overall: {overall}."


# -- the depth guard ---------------------------------------------------------------------------


def recursion_pair() -> Agent:
    """A coordinator whose legal sub-agent has tax as a tool, and tax has legal: a cycle.

    coordinator -> legal -> tax -> legal ... is stopped by the guards: with
    ``Limits(max_depth=2)`` tax is told the maximum depth is reached; with 3, that legal is
    already on the path ``coordinator/legal/tax``. Either way tax answers with what it has,
    legal completes, and the run ends with the coordinator's synthesis. Reach the agents with
    ``legal = coordinator.tool_map()["legal"].agent`` and ``legal.tool_map()["tax"].agent``.
    """
    legal = Agent(
        "legal",
        "You give legal opinions; ask the tax agent about tax questions.",
        ScriptedModel(
            [
                tool_call("tax", input="What are the VAT consequences?"),
                say("Legal opinion, complete."),
            ],
            name="legal",
        ),
    )
    tax = Agent(
        "tax",
        "You give tax opinions; ask the legal agent about contract questions.",
        ScriptedModel(
            [
                tool_call("legal", input="Is the refund a penalty under the contract?"),
                say("Tax opinion with the data available; the legal view is missing."),
            ],
            name="tax",
        ),
    )
    legal.tools = [tax]
    tax.tools = [legal]
    coordinator = ScriptedModel(
        [tool_call("legal", input="Assess the clause."), say("Synthesis.")], name="coordinator"
    )
    return Agent("coordinator", "Ask the legal agent, then synthesise.", coordinator, [legal])


# -- the writer-verifier cycle -------------------------------------------------------------------

WORD_LIMIT = 12
"""The verifier's objective criterion: at most this many words."""

WRITING_TASK = f"Describe the availability of the service in at most {WORD_LIMIT} words."
"""The task given to the writer (and shown to the verifier)."""

DRAFTS = (
    "Our service is available nearly all the time, though planned maintenance can occasionally interrupt it.",
    "Only planned maintenance can interrupt our service briefly.",
)
"""The writer's two drafts: 15 words (rejected), then 8 words (approved)."""


def writer_and_verifier() -> tuple[Agent, Agent, str]:
    """``(writer, verifier, task)`` for the writer-verifier cycle (``agentnb.verify_loop``).

    The writer drafts `DRAFTS[0]`; once its conversation holds an earlier draft (the loop shows
    it the problems and asks for a rewrite) it answers `DRAFTS[1]`. The verifier counts the
    draft's words against `WORD_LIMIT` and replies JSON ``{"outcome": "approved" | "redo",
    "problems": [...]}`` — ``["15 words, the limit is 12"]`` for the first draft. Its
    ``output_type`` is left unset: ``verify_loop`` gives it ``agentnb.Verification``.

    The verifier finds the draft after a ``DRAFT:`` label (the loop's default input is
    ``"TASK:\\n<task>\\n\\nDRAFT:\\n<draft>"``), else after a ``## Document:`` header, else it
    counts the whole message without the task.
    """
    writer = Agent(
        "writer",
        "Write the requested text. When told about problems, rewrite it fixing each one. "
        "Reply with the text only.",
        FunctionModel(_write, name="writer"),
    )
    verifier = Agent(
        "verifier",
        "You receive a task and a draft. Check ONLY that the draft meets the task's "
        "requirements, point by point; do not rewrite it and give no style advice. If a "
        "requirement is not met, the outcome is redo and each problem names it.",
        FunctionModel(_verify, name="verifier"),
    )
    return writer, verifier, WRITING_TASK


def _write(request: ModelRequest) -> Any:
    rewriting = any(m.role == "assistant" for m in request.messages)
    return say(DRAFTS[1] if rewriting else DRAFTS[0])


def _verify(request: ModelRequest) -> Any:
    words = len(draft_in(request.last_user_text).split())
    if words > WORD_LIMIT:
        return say({"outcome": "redo", "problems": [f"{words} words, the limit is {WORD_LIMIT}"]})
    return say({"outcome": "approved", "problems": []})


def draft_in(message: str) -> str:
    """The draft inside a verifier's input (see `writer_and_verifier` for the formats read)."""
    labelled = re.split(r"(?im)^\s*DRAFT\s*:[ \t]*\n?", message)
    if len(labelled) > 1:
        return labelled[-1]
    document = _document_in(message)
    return document if document is not None else message.replace(WRITING_TASK, "")


__all__ = [
    "ATTACHED_INPUT",
    "CLAUSE",
    "COST_KS",
    "COST_MODES",
    "DRAFTS",
    "OPINION",
    "REVIEWERS",
    "REVIEW_TASK",
    "SEVERITY",
    "WORD_LIMIT",
    "WRITING_TASK",
    "Opinion",
    "Scenario",
    "cost_scenario",
    "draft_in",
    "generalist",
    "recursion_pair",
    "review_coordinator",
    "review_hierarchy",
    "review_team",
    "writer_and_verifier",
]
