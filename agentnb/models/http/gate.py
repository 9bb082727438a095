"""The switch that forbids requests to real endpoints, for test suites.

``agentnb.models.ALLOW_MODEL_REQUESTS = False`` (or ``AGENTNB_ALLOW_MODEL_REQUESTS=0`` in the
environment) makes every model client that talks to a server over HTTP refuse to send, with an
error that names the switch; scripted models, `FunctionModel` and `TestModel` never send
anything, so they go on working. The check sits where every HTTP request and stream of every
adapter waits for its client (`.send.Slots.slot`): there is no way round it.
"""

from __future__ import annotations

import os

from ...errors import UserError

ENVIRONMENT = "AGENTNB_ALLOW_MODEL_REQUESTS"
"""Set to ``0``, ``false``, ``no`` or ``off`` to forbid requests (a CI job, a test run)."""

_FORBIDDING = ("0", "false", "no", "off")


def requests_allowed() -> bool:
    """Whether a model client may send a request now: both the module switch and the
    environment variable allow it (either one forbids)."""
    from ... import models  # the switch is an attribute of the package users import

    if getattr(models, "ALLOW_MODEL_REQUESTS", True) is not True:
        return False
    return os.environ.get(ENVIRONMENT, "").strip().lower() not in _FORBIDDING


def check_request_allowed(client: object) -> None:
    """Raise `UserError` when requests are forbidden, naming ``client`` and the switch."""
    if requests_allowed():
        return
    raise UserError(
        f"{client!r} did not send its request: requests to real model endpoints are forbidden "
        f"here (agentnb.models.ALLOW_MODEL_REQUESTS = False, or {ENVIRONMENT}=0). Use a "
        "ScriptedModel or agentnb.TestModel in tests, or allow requests again."
    )
