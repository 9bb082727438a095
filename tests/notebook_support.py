"""Test support for the notebook layer: a comm that records what widgets send (ipywidgets'
own tests replace ``comm.create_comm`` the same way), a kernelspec that is this
interpreter, so a kernel started by a test is the venv's Python in a brand-new venv too,
and a real kernel of it to run cells in (`running_kernel`, `execute`)."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import sys
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import comm
import pytest
from jupyter_client import KernelClient, KernelManager
from jupyter_core.utils import ensure_event_loop


class RecordingComm:
    """Stands in for the kernel's comm: keeps every message a widget sends, and delivers
    messages from a pretend browser to the widget (`from_frontend`)."""

    comm_id = "dummy"
    kernel = "a kernel"  # ipywidgets only sends when the comm has a kernel

    def __init__(self, **kwargs: Any) -> None:
        self.opened = kwargs
        self.messages: list[dict[str, Any]] = []
        self.handler: Callable[[], Any] = lambda: None
        self.closed = False

    def open(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_msg(self, callback: Any) -> None:
        # Held weakly, as the kernel's comm manager does not keep a widget alive either: a
        # widget nobody holds is collected, and closes its comm then.
        self.handler = weakref.WeakMethod(callback)

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        self.messages.append(data or {})

    def close(self, *args: Any, **kwargs: Any) -> None:
        self.closed = True

    def from_frontend(self, data: dict[str, Any]) -> None:
        """Deliver a message as the browser would (the kernel thread calls the handler)."""
        handle = self.handler()
        assert handle is not None, "the widget of this comm was collected"
        handle({"content": {"data": data}, "buffers": []})


class CommLog:
    def __init__(self) -> None:
        self.comms: list[RecordingComm] = []

    def create(self, **kwargs: Any) -> RecordingComm:
        made = RecordingComm(**kwargs)
        self.comms.append(made)
        return made

    def states(self) -> list[dict[str, Any]]:
        """Every ``update`` message sent by any widget, in order."""
        return [m for c in self.comms for m in c.messages if m.get("method") == "update"]


def record_comms(monkeypatch: pytest.MonkeyPatch) -> CommLog:
    """Make every widget created from now on (until the test ends) talk to a `RecordingComm`."""
    log = CommLog()
    monkeypatch.setattr(comm, "create_comm", log.create)
    return log


def write_kernelspec(root: Path) -> Path:
    """A ``python3`` kernelspec running this interpreter, under ``root/kernels``: put ``root``
    first on ``JUPYTER_PATH``."""
    kernel_dir = root / "kernels" / "python3"
    kernel_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (agentnb tests)",
        "language": "python",
    }
    (kernel_dir / "kernel.json").write_text(json.dumps(spec))
    return root


def jupyter_env(tmp: Path) -> dict[str, str]:
    """Environment variables that keep Jupyter's files in ``tmp`` and use `write_kernelspec`."""
    share = write_kernelspec(tmp / "share")
    return {
        "JUPYTER_PATH": str(share),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "AGENTNB_TOKENIZER": "off",
    }


@contextmanager
def running_kernel(tmp: Path) -> Iterator[tuple[KernelManager, KernelClient]]:
    """A kernel of this interpreter (Jupyter's files under ``tmp``), ready, with its client's
    channels open; shut down on exit."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in jupyter_env(tmp).items():
            mp.setenv(key, value)
        manager = KernelManager(kernel_name="python3")
        manager.start_kernel(env={**os.environ})
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
        # jupyter_client's blocking calls run on an event loop that jupyter_core makes for this
        # thread and never closes: close it here, or it (and its two self-pipe sockets) is
        # left for the garbage collector to report as unclosed, in whichever test runs then.
        ensure_event_loop().close()
        asyncio.set_event_loop(None)


def execute(
    client: KernelClient,
    code: str,
    *,
    on_message: Callable[[dict[str, Any]], None] | None = None,
    allow_stdin: bool | None = None,
    timeout: float = 30,
) -> list[dict[str, Any]]:
    """Run ``code``; return the iopub messages until the kernel is idle again (each one also
    given to ``on_message`` as it comes, which is how a test plays the browser)."""
    msg_id = client.execute(code, allow_stdin=allow_stdin)
    seen: list[dict[str, Any]] = []
    while True:
        try:
            msg = client.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no message from the kernel for {timeout} s running {code[:60]!r}")
        seen.append(msg)
        if on_message is not None:
            on_message(msg)
        if (
            msg["msg_type"] == "status"
            and msg["content"]["execution_state"] == "idle"
            and msg["parent_header"].get("msg_id") == msg_id
        ):
            return seen


def errors(messages: list[dict[str, Any]]) -> list[str]:
    """The error values among a cell's messages."""
    return [m["content"].get("evalue", "") for m in messages if m["msg_type"] == "error"]
