"""mkdocs hooks for agentnb's site (``hooks:`` in mkdocs.yml).

- The Notebooks section of the navigation lists every numbered notebook in notebooks/, so a
  notebook added later appears without editing mkdocs.yml.
- Every public name (each ``__all__`` of agentnb and of its layers) must have a docstring: the
  API reference is generated from them. A missing one is a warning, so ``mkdocs build --strict``
  (run by .ci/run) fails on it.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.plugins.agentnb")

DOCS = Path(__file__).parent
PACKAGES = (
    "agentnb",
    "agentnb.models",
    "agentnb.trace",
    "agentnb.runtime",
    "agentnb.patterns",
    "agentnb.notebook",
    "agentnb.integrations",
)


def on_config(config: Any) -> Any:
    notebooks = sorted((DOCS / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for item in config["nav"] or []:
        if isinstance(item, dict) and "Notebooks" in item:
            item["Notebooks"] = [f"notebooks/{path.name}" for path in notebooks]
    return config


def on_pre_build(config: Any) -> None:
    for missing in undocumented():
        log.warning("public name without a docstring (the API reference needs one): %s", missing)


def undocumented() -> list[str]:
    """Public classes and functions, exported by a package's ``__all__``, with no docstring of
    their own."""
    missing = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", []):
            value = getattr(module, name)
            if not (inspect.isclass(value) or inspect.isfunction(value)):
                continue
            if not (value.__doc__ or "").strip():
                missing.append(f"{package}.{name}")
    return sorted(set(missing))
