"""Output types: any type pydantic's `TypeAdapter` validates, as a structured-output request.

Providers' structured output wants a JSON object. A type whose schema is not one (``int``,
``list[str]``, ``Literal[...]``, a union of models) is wrapped in an object with one field,
``response``, as openai-agents and pydantic-ai do; the answer is unwrapped before it reaches
``result.output``. ``str`` is plain text, the default: no schema is sent.
"""

from __future__ import annotations

import json
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Union

from pydantic import TypeAdapter, ValidationError

from ...errors import UserError
from ...models.types import RESPONSE_FIELD, OutputSchema, wrapped_in_object
from ..tools.schema import clean_schema

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


@dataclass(frozen=True)
class OutputSpec:
    """How an agent's final answer is requested and read."""

    adapter: TypeAdapter[Any]
    schema: OutputSchema
    wrapped: bool
    """Whether the schema sent is ``{"response": <the type's schema>}``."""

    def validate(self, text: str) -> Any:
        """The answer as the output type (raises `pydantic.ValidationError`)."""
        text = strip_fence(text)
        if self.wrapped:
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = None
            if isinstance(value, dict) and set(value) == {RESPONSE_FIELD}:
                return self.adapter.validate_python(value[RESPONSE_FIELD])
        return self.adapter.validate_json(text)


def output_spec(output_type: Any) -> OutputSpec | None:
    """The spec for ``output_type`` (None for plain text: ``None`` or ``str``); raises
    `UserError` for a type pydantic cannot validate or describe."""
    if output_type is None or output_type is str:
        return None
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        schema = adapter.json_schema()
    except Exception as exc:  # pydantic's errors for types it cannot handle
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(
            f"output_type must be a type pydantic validates (a BaseModel, dataclass, TypedDict, "
            f"int, list[X], Literal[...], a union, ...), got {output_type!r}: {first}"
        ) from None
    # An object with named properties is sent as it is; anything else (a dict[str, X] too,
    # whose value type lives in additionalProperties) is wrapped.
    wrapped = schema.get("type") != "object" or "properties" not in schema
    if wrapped:
        schema = wrapped_in_object(schema)
    schema = clean_schema(schema)
    return OutputSpec(adapter, OutputSchema(schema_name(output_type), schema), wrapped)


def schema_name(output_type: Any) -> str:
    """``Verdict`` -> ``verdict``; a union of models -> ``refusal_or_approval``; else ``output``."""
    union = typing.get_origin(output_type) in (Union, types.UnionType)
    members = typing.get_args(output_type) if union else (output_type,)
    if not all(isinstance(m, type) and typing.get_origin(m) is None for m in members):
        return "output"
    name = "_or_".join(_snake(m.__name__) for m in members)
    return name if len(name) <= 64 else "output"  # providers cap a schema's name at 64


def strip_fence(text: str) -> str:
    """The JSON inside a Markdown code fence, or the text as it is."""
    text = text.strip()
    match = _FENCE.match(text)
    return match.group(1) if match else text


def validation_errors(exc: ValidationError) -> str:
    """The first few validation errors, one clause each."""
    parts = [
        f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()[:4]
    ]
    return "; ".join(parts)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
