"""Model spec strings (``"openai:gpt-4o-mini"``) resolved to model clients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import UserError

_PROVIDERS: dict[str, Callable[[str], Any]] = {}


def register_provider(prefix: str, factory: Callable[[str], Any]) -> None:
    """Make ``"<prefix>:<model>"`` resolve to ``factory(model)``."""
    _PROVIDERS[prefix] = factory


def _openai(model: str) -> Any:
    from .providers.openai.adapter import OpenAIModel

    return OpenAIModel(model)


def _openai_responses(model: str) -> Any:
    from .providers.openai_responses.adapter import OpenAIResponsesModel

    return OpenAIResponsesModel(model)


def _anthropic(model: str) -> Any:
    from .providers.anthropic.adapter import AnthropicModel

    return AnthropicModel(model)


register_provider("openai", _openai)
register_provider("openai-responses", _openai_responses)
register_provider("anthropic", _anthropic)


def providers() -> list[str]:
    return sorted(_PROVIDERS)


def model_from_spec(spec: str) -> Any:
    """A model client from ``"provider:model"``; an unknown provider is a `UserError` listing the known ones."""
    prefix, sep, name = spec.partition(":")
    if not sep or not name:
        raise UserError(
            f"Model spec {spec!r} is not of the form provider:model; known providers: {', '.join(providers())}"
        )
    factory = _PROVIDERS.get(prefix)
    if factory is None:
        raise UserError(
            f"Unknown model provider {prefix!r} in {spec!r}; known providers: {', '.join(providers())}"
        )
    return factory(name)
