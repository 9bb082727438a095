"""Test support for the notebook layer: a comm that records what widgets send (ipywidgets'
own tests replace ``comm.create_comm`` the same way), and a kernelspec that is this
interpreter, so a kernel started by a test is the venv's Python in a brand-new venv too."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import comm
import pytest


class RecordingComm:
    """Stands in for the kernel's comm: keeps every message a widget sends."""

    comm_id = "dummy"
    kernel = "a kernel"  # ipywidgets only sends when the comm has a kernel

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def open(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_msg(self, *args: Any, **kwargs: Any) -> None:
        pass

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        self.messages.append(data or {})

    def close(self, *args: Any, **kwargs: Any) -> None:
        self.closed = True

    closed = False


class CommLog:
    def __init__(self) -> None:
        self.comms: list[RecordingComm] = []

    def create(self, **kwargs: Any) -> RecordingComm:
        made = RecordingComm()
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
