"""The model-client protocol: one async method, request in, response out (streaming optional)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .types import ModelRequest, ModelResponse


@runtime_checkable
class ModelClient(Protocol):
    """Anything that can answer a `ModelRequest`.

    Implementations: `ScriptedModel`, `FunctionModel`, `OpenAIModel`, recordings and replays.
    ``name`` is shown in traces and price tables (for example ``"gpt-4o-mini"``).

    A client may also offer ``stream(request)``, an async iterator of text and tool-call
    deltas ending with the full `ModelResponse` (see `agentnb.models.deltas`); streamed runs
    use it, and stream a client without it as one delta per response.
    """

    name: str

    async def request(self, request: ModelRequest) -> ModelResponse: ...
