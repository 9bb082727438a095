"""Notebook 12 runs a real model: without ``agentnb[local]`` its cells skip with one reason
(``AGENTNB_REQUIRE_LOCAL=1``, as CI sets, makes them run and fail instead)."""

from __future__ import annotations

import os

import pytest

from agentnb.models.local_server.model import REQUIRE_ENV, TESTS_HINT, missing_packages

REAL_MODEL_NOTEBOOKS = ("12_real_local_model.ipynb",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = None
    missing = missing_packages() or missing_packages("gemma3-270m")
    if missing and os.environ.get(REQUIRE_ENV) != "1":
        skip = pytest.mark.skip(reason=TESTS_HINT)
    for item in items:
        if item.path.name in REAL_MODEL_NOTEBOOKS:
            item.add_marker(pytest.mark.local_model)
            if skip is not None:
                item.add_marker(skip)
