"""Which tokenizer a model client's texts are counted with, and a server's own tokenizer.

A client says how its model tokenizes through an optional ``tokenizer`` attribute, which
the trace layer reads when it counts a call's tokens:

- an encoding's name (``"o200k_base"``, ``"cl100k_base"``): OpenAI's byte-pair encoding;
- ``"provider"``: no tokenizer is known; the provider's reported usage is the count, and
  without one the count is an estimate labelled as such;
- a `ServerTokenizer`: the serving program's own tokenize endpoint (llama.cpp's
  ``llama-server``, llama-cpp-python's server, vLLM), which knows the model's vocabulary;
  chosen by itself only for a server on this machine (a loopback address), since counting
  sends every text there: another host is asked only when the user says
  ``tokenizer="server"``;
- absent or ``None``: the encoding of the client's model name's family, else the default
  encoding labelled ``(default)`` (scripted models, test doubles).

The models layer decides this because only a client knows where its model is served and
with which key; counting happens above, when the trace's rows are read.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from ..http.bounded_post import PostFailed, post_json
from ..http.rules import Secret, display_url

_log = logging.getLogger("agentnb")

ENCODINGS = ("o200k_base", "cl100k_base")
"""OpenAI's encodings agentnb can count with."""

PROVIDER = "provider"
SERVER = "server"
AUTO = "auto"
CHOICES = (AUTO, SERVER, PROVIDER, *ENCODINGS)
"""What ``OpenAIModel(tokenizer=...)`` takes."""

_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o\d)"), "o200k_base"),
    (re.compile(r"^(gpt-4|gpt-3\.5|gpt-35|text-embedding-3|text-embedding-ada)"), "cl100k_base"),
)
_ANTHROPIC = re.compile(r"^(claude|anthropic[:/])")
_PROVIDER_PREFIX = re.compile(r"^[a-z][a-z0-9_-]*[:/]")


def family_encoding(model: str | None) -> tuple[str | None, str]:
    """``(encoding, note)`` for a model name: the encoding of its OpenAI family, or ``None``
    when the table does not know it; ``note`` is ``""``, ``"default"`` or ``"anthropic"``."""
    name = (model or "").lower()
    if _ANTHROPIC.match(name):
        return None, "anthropic"
    name = _PROVIDER_PREFIX.sub("", name)
    for pattern, encoding in _FAMILIES:
        if pattern.match(name):
            return encoding, ""
    return None, "default"


class TokenizerUnavailable(Exception):
    """A server's tokenizer could not count a text (no endpoint, refused, timed out)."""


PROBE_BUDGET_S = 2.0
"""The most time finding a server's tokenize endpoint may take, all probes together."""

REQUEST_DEADLINE_S = 2.0
"""The most time one tokenize request may take, from connecting to its answer's last byte."""


class ServerTokenizer:
    """Counts a text's tokens with the tokenize endpoint of the server a model runs on.

    The endpoint is found on first use, in this order: llama.cpp's ``POST /tokenize``
    (``{"content": text}``), vLLM's ``POST /tokenize`` (``{"model", "prompt"}``),
    llama-cpp-python's ``POST /extras/tokenize`` (``{"input": text}``); each answers
    ``{"tokens": [...]}``. Some add a start-of-text token to every text they tokenize: the
    empty text is tokenized once to learn how many, and that many are taken off each count.
    The model's credentials (``key`` as a bearer token, or the ``headers`` they became) are
    sent to that server only, never to a host a redirect names, and never shown. Counts are
    kept per text.

    Every read is bounded as a whole, not per socket read: each request by ``timeout``
    seconds (connecting, headers and body), the search for the endpoint by ``budget`` seconds
    in all. After a failure the tokenizer stops trying (a server without the endpoint would
    otherwise be asked again for every text), says so once in the ``agentnb`` log, and the
    rows say they hold an estimate or the provider's usage instead.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        key: Secret | None = None,
        timeout: float = REQUEST_DEADLINE_S,
        *,
        budget: float = PROBE_BUDGET_S,
        headers: Mapping[str, Secret] | None = None,
    ) -> None:
        root = str(display_url(base_url)).rstrip("/")  # never a user:password@ nor a query
        self.root = root[: -len("/v1")] if root.endswith("/v1") else root
        self.model = model
        self._key = key
        self._headers = dict(headers or {})
        self.timeout = timeout
        self.budget = budget
        self.method = "server"
        """What the ``tokens_method`` column says, e.g. ``server:llama.cpp`` once found."""
        self.failure: str | None = None
        """Why the server could not count, after it failed once."""
        self._endpoint: tuple[str, str, str] | None = None  # (kind, path, text field)
        self._added = 0
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ServerTokenizer({self.root!r}, model={self.model!r})"

    def __reduce__(self) -> tuple[Any, ...]:  # the key stays behind, like a client's
        return (ServerTokenizer, (self.root, self.model, None, self.timeout))

    def __call__(self, text: str) -> int:
        hit = self._counts.get(text)
        if hit is not None:
            return hit
        with self._lock:
            if self.failure is not None:
                raise TokenizerUnavailable(self.failure)
            try:
                if self._endpoint is None:
                    self._find_endpoint()
                n = max(len(self._tokenize(text, self.timeout)) - self._added, 0)
            except TokenizerUnavailable as exc:
                self.failure = str(exc)
                _log.warning(
                    "agentnb: the tokenizer of %s cannot count (%s); its rows hold the "
                    "provider's usage or an estimate, labelled in tokens_method",
                    self.root,
                    self.failure,
                )
                raise
        if len(self._counts) > 10_000:
            self._counts.clear()
        self._counts[text] = n
        return n

    def _find_endpoint(self) -> None:
        reasons = []
        ends = time.monotonic() + self.budget
        for endpoint in (
            ("llama.cpp", "/tokenize", "content"),
            ("vllm", "/tokenize", "prompt"),
            ("llama-cpp-python", "/extras/tokenize", "input"),
        ):
            self._endpoint = endpoint
            left = min(self.timeout, ends - time.monotonic())
            if left <= 0:
                reasons.append(f"{endpoint[0]}: not tried, the {self.budget:g} s budget was spent")
                continue
            try:
                self._added = len(self._tokenize("", left))
            except TokenizerUnavailable as exc:
                reasons.append(f"{endpoint[0]}: {exc}")
                continue
            self.method = f"server:{endpoint[0]}"
            return
        self._endpoint = None
        raise TokenizerUnavailable(f"no tokenize endpoint at {self.root} ({'; '.join(reasons)})")

    def _tokenize(self, text: str, seconds: float) -> list[Any]:
        assert self._endpoint is not None
        kind, path, field = self._endpoint
        body: dict[str, Any] = {field: text}
        if kind == "vllm":
            body["model"] = self.model
        headers = {name: value.reveal() for name, value in self._headers.items()}
        if self._key is not None and self._key.reveal() not in ("", "not-needed"):
            headers.setdefault("Authorization", f"Bearer {self._key.reveal()}")
        try:
            answer = post_json(self.root + path, body, headers, seconds)
        except PostFailed as exc:
            raise TokenizerUnavailable(str(exc)) from None
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if not isinstance(tokens, list):
            raise TokenizerUnavailable("the answer has no 'tokens' list")
        return tokens
