"""What the data floor knows of the floors above it: small Protocols of what it reads.

An `Agent` is defined a floor up (`agentnb.runtime.agents`), and so is its output spec; the
run's data (`AgentRun`, `Transfer`, `RunResult`, events, hooks) holds agents and reads a few of
their attributes, so it names them by these Protocols and never imports the floor above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from .hooks import Hooks


class OutputSpecLike(Protocol):
    """What a streamed structured answer reads of an agent's output spec."""

    @property
    def adapter(self) -> TypeAdapter[Any]: ...

    @property
    def wrapped(self) -> bool: ...


class AgentLike(Protocol):
    """What the run's data reads of an agent: its name, its own hooks, its output spec."""

    @property
    def name(self) -> str: ...

    @property
    def hooks(self) -> Hooks | None: ...

    def output_adapter(self) -> OutputSpecLike | None: ...
