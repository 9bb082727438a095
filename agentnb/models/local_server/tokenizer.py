"""Which tokenizer a model client's texts are counted with, and a server's own tokenizer.

A client says how its model tokenizes through an optional ``tokenizer`` attribute, which
the trace layer reads when it counts a call's tokens:

- an encoding's name (``"o200k_base"``, ``"cl100k_base"``): OpenAI's byte-pair encoding;
- ``"provider"``: no tokenizer is known; the provider's reported usage is the count, and
  without one the count is an estimate labelled as such;
- a `ServerTokenizer`: the serving program's own tokenize endpoint (llama.cpp's
  ``llama-server``, llama-cpp-python's server, vLLM), which knows the model's vocabulary;
- absent or ``None``: the encoding of the client's model name's family, else the default
  encoding labelled ``(default)`` (scripted models, test doubles).

The models layer decides this because only a client knows where its model is served and
with which key; counting happens above, when the trace's rows are read.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import urllib.error
import urllib.request
from typing import Any

from ..http.rules import Secret

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


class ServerTokenizer:
    """Counts a text's tokens with the tokenize endpoint of the server a model runs on.

    The endpoint is found on first use, in this order: llama.cpp's ``POST /tokenize``
    (``{"content": text}``), vLLM's ``POST /tokenize`` (``{"model", "prompt"}``),
    llama-cpp-python's ``POST /extras/tokenize`` (``{"input": text}``); each answers
    ``{"tokens": [...]}``. Some add a start-of-text token to every text they tokenize: the
    empty text is tokenized once to learn how many, and that many are taken off each count.
    The key is sent as a bearer token and never shown. Counts are kept per text.

    A call is bounded by ``timeout`` seconds; after a failure the tokenizer stops trying (a
    server without the endpoint would otherwise be asked again for every text), and the
    rows say they hold an estimate or the provider's usage instead.
    """

    def __init__(
        self, base_url: str, model: str, key: Secret | None = None, timeout: float = 5.0
    ) -> None:
        root = base_url.rstrip("/")
        self.root = root[: -len("/v1")] if root.endswith("/v1") else root
        self.model = model
        self._key = key
        self.timeout = timeout
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
            if self._endpoint is None:
                self._find_endpoint()
            try:
                n = max(len(self._tokenize(text)) - self._added, 0)
            except TokenizerUnavailable as exc:
                self.failure = str(exc)
                raise
        if len(self._counts) > 10_000:
            self._counts.clear()
        self._counts[text] = n
        return n

    def _find_endpoint(self) -> None:
        reasons = []
        for endpoint in (
            ("llama.cpp", "/tokenize", "content"),
            ("vllm", "/tokenize", "prompt"),
            ("llama-cpp-python", "/extras/tokenize", "input"),
        ):
            self._endpoint = endpoint
            try:
                self._added = len(self._tokenize(""))
            except TokenizerUnavailable as exc:
                reasons.append(f"{endpoint[0]}: {exc}")
                continue
            self.method = f"server:{endpoint[0]}"
            return
        self._endpoint = None
        self.failure = f"no tokenize endpoint at {self.root} ({'; '.join(reasons)})"
        raise TokenizerUnavailable(self.failure)

    def _tokenize(self, text: str) -> list[Any]:
        assert self._endpoint is not None
        kind, path, field = self._endpoint
        body: dict[str, Any] = {field: text}
        if kind == "vllm":
            body["model"] = self.model
        headers = {"Content-Type": "application/json"}
        if self._key is not None and self._key.reveal() not in ("", "not-needed"):
            headers["Authorization"] = f"Bearer {self._key.reveal()}"
        request = urllib.request.Request(
            self.root + path, json.dumps(body).encode(), headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:  # noqa: S310
                answer = json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            raise TokenizerUnavailable(f"HTTP {exc.code}") from None
        except (OSError, ValueError, http.client.HTTPException) as exc:  # refused, timed out
            raise TokenizerUnavailable(type(exc).__name__) from None
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if not isinstance(tokens, list):
            raise TokenizerUnavailable("the answer has no 'tokens' list")
        return tokens
