"""A function's parameters as a JSON schema for a model: types from the annotations,
descriptions from ``Annotated`` or the docstring (Google, NumPy or Sphinx style), and the
signatures that cannot be tools refused with a `UserError` that says why."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, create_model

from ...errors import UserError
from ..data.context import RunContext
from .context import ToolCallContext


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """A docstring's first paragraph, and each parameter's description from its Google-,
    NumPy- or Sphinx-style parameter section (parsed by ``docstring_parser``)."""
    import docstring_parser

    paragraphs = doc.split("\n\n")
    first = paragraphs[0] if paragraphs else ""
    section = re.match(r"\s*(Args|Arguments|Parameters|Params|:param)\b", first)
    summary = "" if section else " ".join(first.split())
    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError:
        return summary, {}
    args = {p.arg_name: " ".join(p.description.split()) for p in parsed.params if p.description}
    return summary, args


def _is_run_context(annotation: Any) -> bool:
    """Whether ``annotation`` is agentnb's `RunContext` (a floor below the tools)."""
    return annotation is RunContext


def arguments_model(
    fn: Callable[..., Any], tool_name: str, arg_docs: dict[str, str]
) -> tuple[type[BaseModel], str | None]:
    from pydantic import Field

    hints = _type_hints(fn)
    fields: dict[str, Any] = {}
    context_param = None
    for pname, param in inspect.signature(fn).parameters.items():
        annotation = hints.get(pname, param.annotation)
        if annotation is ToolCallContext:
            context_param = pname
            continue
        if _is_run_context(annotation):
            raise UserError(
                f"Tool {tool_name!r}: parameter {pname!r} is typed RunContext; a tool is given "
                "its context as agentnb.ToolCallContext (ctx.run is the RunContext): annotate "
                f"it `{pname}: ToolCallContext`."
            )
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UserError(
                f"Tool {tool_name!r}: *args and **kwargs cannot be described to a model; name each parameter."
            )
        if param.kind == param.POSITIONAL_ONLY:
            raise UserError(
                f"Tool {tool_name!r}: parameter {pname!r} is positional-only, but a model's "
                "arguments arrive by name; drop the '/' from the signature."
            )
        if annotation is inspect.Parameter.empty:
            annotation = Any
        elif isinstance(annotation, str):
            raise UserError(
                f"Tool {tool_name!r}: the type {annotation!r} of parameter {pname!r} cannot be resolved "
                "(a type defined inside a function, under `from __future__ import annotations`?). "
                "Define it at module level."
            )
        default = ... if param.default is inspect.Parameter.empty else param.default
        described = arg_docs.get(pname)
        if get_origin(annotation) is Annotated:  # Annotated[T, "text"] describes the parameter
            base, *metadata = get_args(annotation)
            texts = [m for m in metadata if isinstance(m, str)]
            if texts:
                described = texts[0]
                kept = [m for m in metadata if not isinstance(m, str)]
                annotation = Annotated[tuple([base, *kept])] if kept else base
        if described is None:
            fields[pname] = (annotation, default)  # a Field(description=...) in Annotated stays
        else:
            fields[pname] = (annotation, Field(default, description=described))
    model = create_model(f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields)
    return model, context_param


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The resolved annotations; when one cannot be resolved (a type local to a function under
    ``from __future__ import annotations``), the others still are, one by one."""
    try:
        return get_type_hints(fn, include_extras=True)  # keep Annotated: it may describe
    except Exception:
        pass
    hints: dict[str, Any] = {}
    namespace = getattr(fn, "__globals__", {})
    for pname, annotation in getattr(fn, "__annotations__", {}).items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # what get_type_hints does, per name
            except Exception:
                pass
        hints[pname] = annotation
    return hints


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles: they repeat the names and are resent on every turn."""

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: clean(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node

    out: dict[str, Any] = clean(schema)
    out.pop("additionalProperties", None)
    out.pop("description", None)  # a model's docstring: the tool's description says it already
    return out
