"""The writer–verifier cycle, bounded in code.

The writer drafts; the verifier receives the task and the draft and answers with a structured
`Verification`; on ``redo`` the writer, continuing its own conversation, is shown the problems
and rewrites. The loop stops at approval or after ``max_rounds`` drafts, and then delivers the
last draft stating what is still open (``remaining``) — it cannot bounce until a turn limit.

The cycle helps when verifying is easier than writing and the verifier checks something
objective (a word limit, a schema, a test); without an external criterion it adds cost and noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Unpack

from pydantic import BaseModel, Field

from .. import checks
from ..errors import UserError
from ..models.types import Message
from ..runtime import Agent, RunKeywords, RunOptions, RunResult, shows_run_keywords, to_text
from . import _runs
from .result import PatternResult

if TYPE_CHECKING:
    import pandas as pd


class Verification(BaseModel):
    """A verifier's answer: approved, or redo with the problems to fix."""

    outcome: Literal["approved", "redo"]
    problems: list[str] = Field(
        default_factory=list, description="One item per problem, concrete and actionable."
    )


@dataclass(eq=False)
class Round:
    """One round: the draft, the verifier's outcome, and what the round cost."""

    round: int
    draft: str
    outcome: str | None
    """``approved``, ``redo``, or None when the verifier gave no answer."""
    problems: list[str]
    writer: RunResult = field(repr=False)
    verifier: RunResult | None = field(default=None, repr=False)

    @property
    def chars_writer(self) -> int:
        return self.writer.chars_in

    @property
    def chars_verifier(self) -> int:
        return self.verifier.chars_in if self.verifier is not None else 0

    @property
    def chars_in(self) -> int:
        """Characters sent to the models in this round, writer and verifier together."""
        return self.chars_writer + self.chars_verifier


@dataclass(eq=False, repr=False)
class VerifyResult(PatternResult):
    """The outcome of `verify_loop`."""

    task: str
    rounds: list[Round]
    max_rounds: int
    error: str | None = None
    """Why the loop stopped early (the writer or the verifier failed), else None."""

    key_columns = ("round", "role")

    def parts(self) -> dict[tuple[int, str], RunResult]:
        """Every run of the loop by ``(round, "writer" | "verifier")``, in order."""
        parts: dict[tuple[int, str], RunResult] = {}
        for r in self.rounds:
            parts[(r.round, "writer")] = r.writer
            if r.verifier is not None:
                parts[(r.round, "verifier")] = r.verifier
        return parts

    @property
    def ok(self) -> bool:
        """Every run of the loop completed (says nothing about approval: see ``approved``)."""
        return self.error is None

    @property
    def output(self) -> Any:
        """The last draft the writer produced (delivered even when not approved)."""
        for r in reversed(self.rounds):
            if r.writer.ok:
                return r.writer.output
        return None

    @property
    def approved(self) -> bool:
        return bool(self.rounds) and self.rounds[-1].outcome == "approved"

    @property
    def remaining(self) -> list[str]:
        """The problems still open in the delivered draft ([] when approved)."""
        if self.approved or not self.rounds:
            return []
        last = self.rounds[-1]
        if last.outcome is None:
            return [f"the last draft was not verified: {self.error}"]
        return list(last.problems)

    def table(self, *, run_ids: bool = False) -> pd.DataFrame:
        """One row per round: draft, outcome, problems, characters sent (``chars_writer``,
        ``chars_verifier`` and their sum ``chars_in``, the name the calls frame uses).

        Run ids are random unless chosen, so they change on every run of a notebook; they are
        added (``writer_run_id``, ``verifier_run_id``) only with ``run_ids=True``, e.g. to join
        a round to its rows in ``calls``.
        """
        import pandas as pd

        columns = [
            "round",
            "draft",
            "outcome",
            "problems",
            "chars_writer",
            "chars_verifier",
            "chars_in",
        ]
        rows = [
            [
                r.round,
                r.draft,
                r.outcome,
                list(r.problems),
                r.chars_writer,
                r.chars_verifier,
                r.chars_in,
            ]
            for r in self.rounds
        ]
        if run_ids:
            columns += ["writer_run_id", "verifier_run_id"]
            for row, r in zip(rows, self.rounds):
                row += [r.writer.run_id, r.verifier.run_id if r.verifier is not None else None]
        return pd.DataFrame(rows, columns=columns)

    @property
    def frame(self) -> pd.DataFrame:
        """Same as `table()` (without run ids)."""
        return self.table()

    def __repr__(self) -> str:
        state = "approved" if self.approved else f"not approved, remaining={self.remaining!r}"
        error = f", error={self.error!r}" if self.error else ""
        return f"VerifyResult({state}, rounds={len(self.rounds)}/{self.max_rounds}, chars_in={self.chars_in:,}{error})"


def verifier_request(task: str, draft: str) -> str:
    """What the verifier receives by default: the task and the draft, labelled."""
    return f"TASK:\n{task}\n\nDRAFT:\n{draft}"


def redo_request(problems: list[str], round: int, max_rounds: int) -> str:
    """What the writer is told after a ``redo``, in its own conversation."""
    listed = "\n".join(f"- {p}" for p in problems) or "- (the verifier gave no details)"
    return (
        f"A verifier checked your draft and asked for a rewrite (round {round} of {max_rounds}). "
        f"Problems:\n{listed}\nRewrite the text fixing every problem. Reply with the new text only."
    )


@shows_run_keywords
async def verify_loop(
    writer: Agent,
    verifier: Agent,
    task: str,
    *,
    max_rounds: int = 2,
    verifier_input: Callable[[str, str], str] = verifier_request,
    **options: Unpack[RunKeywords],
) -> VerifyResult:
    """Draft, verify, rewrite — at most ``max_rounds`` drafts; see `VerifyResult`.

    The verifier answers with `Verification` unless its ``output_type`` is another model with
    ``outcome`` and ``problems`` fields. ``verifier_input(task, draft)`` builds its input.
    ``limits`` and ``timeout`` apply to each run (each draft, each check) separately;
    the other options are those of `agentnb.run` (`agentnb.RunOptions`), for both agents.

    ``hooks`` (an `agentnb.Hooks`) see both agents in every round. ``on_event`` is called
    with every event of every run as it happens, its ``part`` the run's key in
    ``VerifyResult.parts()`` (``(1, "writer")``, ``(1, "verifier")``, ...), each run ending
    with its `RunEnded`: the events ``agentnb.run_streamed(agentnb.verify_loop, writer,
    verifier, task)`` yields, as a callback.
    """
    _runs.check_timeout(options.get("timeout"), "verify_loop")
    each = RunOptions.of(**options)
    _runs.check_agent(writer, "verify_loop(writer)", each.model)
    _runs.check_agent(verifier, "verify_loop(verifier)", each.model)
    if not isinstance(task, str) or not task.strip():
        raise UserError("verify_loop(task) must be the task as non-empty text")
    checks.positive_int(max_rounds, "verify_loop(max_rounds=...)", optional=False)
    checks.function(
        verifier_input, "verify_loop(verifier_input=...)", what="a function (task, draft) -> str"
    )
    checker = _with_verification_type(verifier)
    t0 = _runs.clock()
    rounds: list[Round] = []
    conversation: _runs.Input = task
    for n in range(1, max_rounds + 1):
        writing = _runs.for_part(each, (n, "writer"))
        written = await _runs.run_on_clock(writer, conversation, writing, t0=t0)
        if not written.ok:
            rounds.append(Round(n, "", None, [], written))
            return VerifyResult(task, rounds, max_rounds, f"the writer {_runs.reason(written)}")
        draft = to_text(written.output)
        checking = _runs.for_part(each, (n, "verifier"))
        checked = await _runs.run_on_clock(checker, verifier_input(task, draft), checking, t0=t0)
        if not checked.ok:
            rounds.append(Round(n, draft, None, [], written, checked))
            return VerifyResult(task, rounds, max_rounds, f"the verifier {_runs.reason(checked)}")
        verdict = checked.output
        outcome = str(verdict.outcome)
        problems = [str(p) for p in verdict.problems]
        rounds.append(Round(n, draft, outcome, problems, written, checked))
        if outcome == "approved":
            break
        if n < max_rounds:  # the writer goes on in its own conversation, shown the problems
            conversation = [*written.messages, Message.user(redo_request(problems, n, max_rounds))]
    return VerifyResult(task, rounds, max_rounds)


def _with_verification_type(agent: Agent) -> Agent:
    output_type = agent.output_type
    if output_type is None:
        return agent.clone(output_type=Verification)
    fields = getattr(output_type, "model_fields", None)
    if not isinstance(fields, dict) or "outcome" not in fields or "problems" not in fields:
        raise UserError(
            f"verify_loop(): {agent.name}'s output_type must have 'outcome' ('approved' or 'redo') and "
            "'problems' fields; leave output_type unset to use agentnb.Verification."
        )
    return agent
