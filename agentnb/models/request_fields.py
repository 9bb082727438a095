"""The request fields agentnb builds itself, which extra fields may not replace.

``ModelSettings(extra=...)`` and an adapter's ``params=`` add fields to a request's body, and
an SDK merges them over the fields agentnb built. Were ``messages`` among them, the server
would receive other messages than the trace shows and the sizes measure: so the fields
agentnb builds are refused where the extra fields are given, each with the setting that
covers it, and so is a value JSON cannot carry (it could not be sent, recorded or compared).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import UserError

BUILT: dict[str, str] = {
    "model": "the model client's model name",
    "messages": "the agent's instructions and the run's input",
    "system": "the agent's instructions",
    "input": "the run's input",
    "instructions": "the agent's instructions",
    "prompt": "the run's input",
    "tools": "the agent's tools",
    "functions": "the agent's tools",
    "tool_choice": "ModelSettings(tool_choice=...)",
    "function_call": "ModelSettings(tool_choice=...)",
    "stream": "run_streamed(...) (agentnb streams when the run does)",
    "stream_options": "run_streamed(...) (agentnb asks for usage in a stream)",
    "response_format": "Agent(output_type=...)",
}
"""Fields agentnb always builds, and what sets them."""

SAMPLING: dict[str, str] = {
    "temperature": "ModelSettings(temperature=...)",
    "top_p": "ModelSettings(top_p=...)",
    "max_tokens": "ModelSettings(max_tokens=...)",
    "max_completion_tokens": "ModelSettings(max_tokens=...)",
    "max_output_tokens": "ModelSettings(max_tokens=...)",
    "seed": "ModelSettings(seed=...)",
    "stop": "ModelSettings(stop=...)",
    "stop_sequences": "ModelSettings(stop=...)",
    "parallel_tool_calls": "ModelSettings(parallel_tool_calls=...)",
}
"""Fields a `ModelSettings` field sets: in ``extra`` they would say the same thing twice.
An adapter's ``params=`` may carry them as the client's defaults, which settings override."""


def check_extra(fields: Mapping[str, Any] | None, where: str, *, settings: bool) -> None:
    """Refuse a field agentnb builds (``settings``: one a `ModelSettings` field sets, too)
    and a value JSON cannot encode, naming ``where`` they were given."""
    if not fields:
        return
    for key, value in fields.items():
        covered = BUILT.get(key) or (SAMPLING.get(key) if settings else None)
        if covered is not None:
            raise UserError(
                f"{where} cannot set {key!r}: agentnb builds it from {covered}, and the trace "
                f"must show what was sent. Use that instead, and remove {key!r}."
            )
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UserError(
                f"{where}: the value of {key!r} cannot be sent as JSON ({exc}); give plain "
                "numbers, strings, lists and dicts."
            ) from None


def extra_body(params: Mapping[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The SDK's ``extra_body`` keyword for ``body`` (popping ``ModelSettings.extra`` from
    it): the client's ``params`` first, for the fields the request does not set itself."""
    settings = body.pop("extra_body", {})
    merged = {k: v for k, v in params.items() if k not in body and k not in settings}
    merged.update(settings)
    return {"extra_body": merged} if merged else {}
