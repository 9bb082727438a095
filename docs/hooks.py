"""mkdocs hooks for agentnb's site (``hooks:`` in mkdocs.yml).

- The Notebooks section of the navigation lists every numbered notebook in notebooks/, so a
  notebook added later appears without editing mkdocs.yml.
- A widget's output renders as the static snapshot saved beside it (``text/html``, written by
  agentnb.notebook._snapshot): the site has no kernel, and the widget renderer nbconvert would
  otherwise load comes from a CDN, so offline the page would show nothing where the widget was.
  The notebook is rendered from a copy without the widget views and the saved widget state,
  so the page loads no script from outside the site.
- Every public name (each ``__all__`` of agentnb and of its layers) must have a docstring: the
  API reference is generated from them. A missing one is a warning, so ``mkdocs build --strict``
  (run by .ci/run) fails on it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import logging
import tempfile
from collections.abc import Callable
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
    _render_widgets_as_snapshots()
    return config


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _render_widgets_as_snapshots() -> None:
    """Make mkdocs-jupyter convert each notebook with its widgets as their snapshots (its
    ``convert.nb2html`` is what the plugin calls for every notebook page)."""
    from mkdocs_jupyter import convert

    original = getattr(convert.nb2html, "__wrapped__", convert.nb2html)
    convert.nb2html = _with_snapshots(original)


def _with_snapshots(nb2html: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(nb2html)
    def convert(nb_path: str, *args: Any, **kwargs: Any) -> str:
        path = Path(nb_path)
        if path.suffix != ".ipynb":
            return nb2html(nb_path, *args, **kwargs)
        notebook = json.loads(path.read_text(encoding="utf-8"))
        if not static_widgets(notebook):
            return nb2html(nb_path, *args, **kwargs)
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / path.name
            copy.write_text(json.dumps(notebook), encoding="utf-8")
            return nb2html(str(copy), *args, **kwargs)

    return convert


def static_widgets(notebook: dict[str, Any]) -> bool:
    """Drop the widget views that have a static ``text/html`` beside them, and the saved
    widget state (whose presence makes nbconvert load the widget renderer); True if anything
    changed. A view without a static picture is left alone, and the build warns about it."""
    changed = notebook.get("metadata", {}).pop("widgets", None) is not None
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW not in data:
                continue
            if "text/html" in data:
                del data[WIDGET_VIEW]
                changed = True
            else:
                log.warning("a widget output with no static text/html cannot show in the docs")
    return changed


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
