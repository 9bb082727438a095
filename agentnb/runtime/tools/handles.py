"""Which document handles a sub-agent tool offers its caller, run by run.

A sub-agent's default input is a task and, optionally, the handles of documents the runtime
attaches (``artifacts``). The parameter is offered only where there is something to route and
names exactly what there is: the ``artifacts`` array appears in the tool's schema when the run
holds a document beyond its input, and its items are an ``enum`` of those documents' handles;
a tool made with ``by_handle=True`` also offers the input itself, by its handle ``input`` (and
then always has the parameter).
A free string would invite a model to invent handles (``"description"``, ``"./src/utils.js"``);
an enum lets a server with grammar-constrained tool calling produce real ones only. A handle
the model sends anyway that the run does not know stays a tool error the caller reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import UserError

INPUT = "input"
"""The handle of the run's input."""

TASK = {"type": "string", "description": "The task."}
HANDLES_DESCRIPTION = "Document handles to attach; never paste documents."


def check_by_handle(value: Any, where: str) -> bool | None:
    """``by_handle`` as given (None, True or False), or a `UserError`."""
    if value is not None and not isinstance(value, bool):
        raise UserError(
            f"{where}(by_handle=...) must be None (offer document handles when the run has a "
            f"document beyond its input), True (always) or False (never), got {value!r}"
        )
    return value


def offered(artifacts: Mapping[str, str], by_handle: bool | None) -> tuple[str, ...]:
    """The handles a tool offers in a run holding ``artifacts``: the documents attached to
    the run, and the input's handle too with ``by_handle=True`` (empty: no ``artifacts``
    parameter at all)."""
    if by_handle is False:
        return ()
    if by_handle:
        return tuple(artifacts)
    return tuple(handle for handle in artifacts if handle != INPUT)


def handles_property(handles: tuple[str, ...]) -> dict[str, Any]:
    """The ``artifacts`` parameter naming ``handles``."""
    return {
        "type": "array",
        "items": {"type": "string", "enum": list(handles)},
        "description": HANDLES_DESCRIPTION,
    }


def sub_agent_parameters(handles: tuple[str, ...]) -> dict[str, Any]:
    """The default sub-agent input: the task, and the handles when there are any."""
    properties: dict[str, Any] = {"input": dict(TASK)}
    if handles:
        properties["artifacts"] = handles_property(handles)
    return {"type": "object", "properties": properties, "required": ["input"]}
