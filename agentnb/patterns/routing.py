"""Code-routed handoffs: the model classifies, Python routes.

A triage agent's output type is a union of `Intent` subclasses and `Respond`. When its answer
is an intent, `HandoffRoute` picks the target by ``isinstance`` in registration order and the
run goes on with it: no ``transfer_to_*`` tool specs resent on every turn, no transfer call for
the model to generate, no second model call to decide. The target receives the user's message
and the intent as JSON. A `Respond` is a direct answer: its ``message`` is the run's output.

::

    route = (HandoffRoute("support")
             .when(RefundIntent).to(refunds)
             .when(BillingIntent, CancelIntent).to(billing)
             .otherwise(general))
    triage = Agent("Triage", "Classify the request.", model, route=route)  # output type: the union
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from pydantic import BaseModel, ConfigDict

from .. import checks
from ..errors import UserError
from ..models.types import Message
from ..runtime import Agent, AgentRun, Transfer, intent_message, user_message


class Intent(BaseModel):
    """Base class of the intents a triage agent may classify a request as.

    Subclass it with the fields the target needs (an order id, a reason). Intents that would
    otherwise have the same fields need a discriminating field, e.g.
    ``kind: Literal["cancel"] = "cancel"``: extra keys are refused, so a JSON answer can only
    be read as the intent it was written for.
    """

    model_config = ConfigDict(extra="forbid")


# Respond's docstring is the description the model reads in the triage agent's output schema
# (a union keeps each member's), resent on every triage call: plain words, addressed to the
# model. For Python readers: ``message`` becomes the run's output and no handoff happens.
class Respond(BaseModel):
    """Reply to the user yourself, without handing the request over to another agent."""

    model_config = ConfigDict(extra="forbid")

    message: str


@dataclass(eq=False)
class _Rule:
    intents: tuple[type[Intent], ...]
    target: Agent


@dataclass(eq=False)
class _When:
    """The half-built rule ``route.when(...)``: finish it with ``.to(agent)``."""

    route: HandoffRoute
    intents: tuple[type[Intent], ...]

    def __getattr__(self, name: str) -> Any:
        # route.when(A).when(B), .when(A).otherwise(x): a rule left without its target
        if name.startswith("__"):
            raise AttributeError(name)
        raise UserError(
            f"HandoffRoute({self.route.name!r}).when({_names(self.intents)}) needs .to(agent) "
            f"before .{name}(...): write .when(A).to(agent_a).when(B).to(agent_b)."
        )

    def to(self, agent: Agent) -> HandoffRoute:
        if not isinstance(agent, Agent):
            raise UserError(f".to() takes an Agent, got {type(agent).__name__}")
        self.route.rules.append(_Rule(self.intents, agent))
        self.route._pending = None
        return self.route


@dataclass(eq=False)
class HandoffRoute:
    """Routes a triage agent's `Intent` output to a target agent, in Python (zero routing tokens)."""

    name: str
    rules: list[_Rule] = field(default_factory=list)
    fallback: Agent | None = None
    _pending: _When | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        checks.text(self.name, "HandoffRoute(name)", empty=False)
        if not isinstance(self.rules, list) or not all(isinstance(r, _Rule) for r in self.rules):
            raise UserError(
                f"HandoffRoute({self.name!r}): build its rules with .when(Intent).to(agent), "
                f"not rules=...; got {self.rules!r}"[:300]
            )
        if self.fallback is not None and not isinstance(self.fallback, Agent):
            raise checks.fail("HandoffRoute(fallback=...)", "an Agent or None", self.fallback)

    def when(self, *intents: type[Intent]) -> _When:
        """Start a rule for one or more intent types; finish it with ``.to(agent)``."""
        if self._pending is not None:
            raise UserError(
                f"HandoffRoute({self.name!r}): .when({_names(self._pending.intents)}) has no .to(agent) yet."
            )
        if not intents:
            raise UserError(
                f"HandoffRoute({self.name!r}).when() needs at least one Intent subclass"
            )
        for intent in intents:
            self._check_new(intent)
        self._pending = _When(self, tuple(intents))
        return self._pending

    def otherwise(self, agent: Agent) -> HandoffRoute:
        """The target of any intent no rule matches."""
        if not isinstance(agent, Agent):
            raise UserError(f".otherwise() takes an Agent, got {type(agent).__name__}")
        self.fallback = agent
        return self

    def _check_new(self, intent: Any) -> None:
        if intent is Respond:
            raise UserError(
                f"HandoffRoute({self.name!r}): Respond is the direct answer and is never routed; "
                "register only Intent subclasses."
            )
        if not (isinstance(intent, type) and issubclass(intent, Intent)) or intent is Intent:
            raise UserError(
                f"HandoffRoute({self.name!r}).when() takes subclasses of agentnb.Intent, got {intent!r}."
            )
        for registered in self.intents():
            if registered is intent:
                raise UserError(
                    f"HandoffRoute({self.name!r}): {intent.__name__} is registered twice."
                )
            if issubclass(intent, registered):
                raise UserError(
                    f"HandoffRoute({self.name!r}): {intent.__name__} is registered after its parent "
                    f"{registered.__name__}, which would always match first (rules are tried in order). "
                    f"Register {intent.__name__} before {registered.__name__}."
                )

    def intents(self) -> list[type[Intent]]:
        """Every intent type registered, in order."""
        return [i for rule in self.rules for i in rule.intents]

    def targets(self) -> list[Agent]:
        """The agents this route can hand over to, each once (the fallback last)."""
        seen: list[Agent] = []
        for agent in [*(r.target for r in self.rules), *([self.fallback] if self.fallback else [])]:
            if not any(a is agent for a in seen):
                seen.append(agent)
        return seen

    def output_type(self) -> Any:
        """The triage agent's output type: ``Respond | <every registered intent>``."""
        self._check_complete()
        members = (Respond, *self.intents())
        return Union[members] if len(members) > 1 else Respond  # noqa: UP007

    def resolve(self, output: Any) -> Agent | None:
        """The target for ``output``; ``None`` for a `Respond` (or anything that is not an intent)."""
        if not isinstance(output, Intent):
            return None
        for rule in self.rules:
            if isinstance(output, rule.intents):
                return rule.target
        return self.fallback

    def apply(self, output: Any, state: AgentRun) -> Any:
        """Called by the run loop on the triage agent's validated answer: a `Transfer` or the output."""
        if isinstance(output, Respond):
            return output.message
        if not isinstance(output, Intent):
            return output
        target = self.resolve(output)
        if target is None:
            raise UserError(
                f"HandoffRoute({self.name!r}) has no rule for {type(output).__name__} and no "
                ".otherwise(agent): add one, or remove the intent from the triage agent's output type."
            )
        source = state.agent
        if target is source or target.name in state.handoffs:
            raise UserError(
                f"HandoffRoute({self.name!r}) sends {type(output).__name__} to {target.name}, which "
                "already had control in this run: a cycle. Route it to another agent."
            )
        text = intent_message(user_message(state.messages), output, source.name)
        return Transfer(
            target,
            [Message.user(text)],
            f"Routed to {target.name} by HandoffRoute {self.name!r}.",
            routing="code",
        )

    def _check_complete(self) -> None:
        if self._pending is not None:
            raise UserError(
                f"HandoffRoute({self.name!r}): .when({_names(self._pending.intents)}) has no .to(agent)."
            )

    def __repr__(self) -> str:
        rules = [f"{_names(r.intents)} -> {r.target.name}" for r in self.rules]
        if self.fallback is not None:
            rules.append(f"otherwise -> {self.fallback.name}")
        return f"HandoffRoute({self.name!r}: {'; '.join(rules) or 'no rules'})"


def _names(intents: tuple[type[Intent], ...]) -> str:
    return ", ".join(i.__name__ for i in intents)


__all__ = ["HandoffRoute", "Intent", "Respond"]
