"""Exact token counts offline: bpe-openai behind the tokenizer interface, the encoding by model.

The ids below are published ones (tiktoken's own tests and README give ``hello world`` for
both encodings; the others come from tokenizer ports that test against tiktoken), so these
tests check bpe-openai against tiktoken without tiktoken's download.
"""

from __future__ import annotations

import base64
import hashlib
import os
import random
import threading

import pytest

import agentnb as a
from agentnb.trace import _tokenizers, tokens

bpe_openai = pytest.importorskip("bpe_openai")

PUBLISHED = [
    ("o200k_base", "hello world", [24912, 2375]),
    ("o200k_base", " 日本語とEnglish 12345!\n", [17428, 40909, 5330, 28881, 220, 7633, 2548, 4175]),
    ("o200k_base", "a\n\n", [64, 279]),
    ("o200k_base", "<|endoftext|>", [27, 91, 419, 1440, 919, 91, 29]),
    ("cl100k_base", "hello world", [15339, 1917]),
    ("cl100k_base", "tiktoken is great!", [83, 1609, 5963, 374, 2294, 0]),
    ("cl100k_base", "是美國", [21043, 58666, 12554, 233]),
]


@pytest.mark.parametrize(("encoding", "text", "ids"), PUBLISHED)
def test_bpe_openai_gives_the_published_ids_and_agentnb_counts_them(encoding, text, ids):
    assert bpe_openai.get_encoding(encoding).encode_ordinary(text) == ids
    count = _tokenizers.load("bpe-openai", encoding)
    assert count is not None and count(text) == len(ids)  # special tokens count as text


@pytest.mark.parametrize(
    ("model", "method"),
    [
        ("gpt-4o-mini", "bpe-openai:o200k_base"),
        ("openai:gpt-4.1", "bpe-openai:o200k_base"),
        ("o3-mini", "bpe-openai:o200k_base"),
        ("gpt-5", "bpe-openai:o200k_base"),
        ("gpt-4", "bpe-openai:cl100k_base"),
        ("gpt-4-turbo", "bpe-openai:cl100k_base"),
        ("gpt-3.5-turbo", "bpe-openai:cl100k_base"),
        ("scripted", "bpe-openai:o200k_base (default)"),
        ("claude-sonnet-4", "bpe-openai:o200k_base (approximate: no Claude tokenizer)"),
        ("anthropic:claude-3-5-haiku", "bpe-openai:o200k_base (approximate: no Claude tokenizer)"),
    ],
)
def test_the_encoding_follows_the_model_and_the_method_says_which(model, method):
    a.set_tokenizer("bpe-openai")
    count, said = tokens.tokenizer(model)
    assert said == method
    assert count is not None and count("hello world") == 2


def test_a_pinned_encoding_is_used_for_every_model():
    a.set_tokenizer("bpe-openai:cl100k_base")
    assert tokens.tokenizer("gpt-4o")[1] == "bpe-openai:cl100k_base"
    assert tokens.tokenizer("scripted")[1] == "bpe-openai:cl100k_base"  # chosen, not a default
    assert tokens.tokenizer("gpt-4o")[0]("tiktoken is great!") == 6


def test_the_environment_variable_pins_or_switches_off(monkeypatch):
    monkeypatch.setenv("AGENTNB_TOKENIZER", "bpe-openai:cl100k_base")
    a.set_tokenizer(None)
    assert tokens.tokenizer("gpt-4o")[1] == "bpe-openai:cl100k_base"
    monkeypatch.setenv("AGENTNB_TOKENIZER", "off")
    a.set_tokenizer(None)
    assert tokens.tokenizer("gpt-4o") == (None, "unavailable")


def test_automatic_choice_falls_back_to_bpe_openai_when_tiktoken_cannot_load(monkeypatch):
    monkeypatch.setenv("AGENTNB_TOKENIZER", "auto")
    monkeypatch.setattr(_tokenizers, "installed", lambda backend: True)
    asked: list[str] = []

    def no_encoding_file(encoding: str):
        asked.append(encoding)
        raise OSError("no network to download the encoding")

    monkeypatch.setattr(_tokenizers, "_tiktoken", no_encoding_file)
    a.set_tokenizer(None)
    assert tokens.tokenizer("gpt-4o")[1] == "bpe-openai:o200k_base"
    assert tokens.tokenizer("gpt-4o-mini")[1] == "bpe-openai:o200k_base"
    assert asked == ["o200k_base"]  # tried once per encoding, not once per call


def test_a_tiktoken_download_that_hangs_does_not_hang_the_run(monkeypatch):
    monkeypatch.setenv("AGENTNB_TOKENIZER", "auto")
    monkeypatch.setattr(_tokenizers, "installed", lambda backend: True)
    monkeypatch.setattr(_tokenizers, "TIKTOKEN_TIMEOUT_S", 0.05)
    release = threading.Event()
    monkeypatch.setattr(_tokenizers, "_tiktoken", lambda encoding: release.wait(60))
    a.set_tokenizer(None)
    try:
        result = a.run_sync(a.Agent("w", "Be brief.", a.ScriptedModel(["Fine."])), "hello world")
        calls = result.calls  # counted (and the tokenizer loaded) when the rows are read
    finally:
        release.set()
    assert list(calls["tokens_method"]) == ["bpe-openai:o200k_base (default)"]
    assert calls["tokens_in"].iloc[0] == 2 + 3  # "hello world", "Be brief."


def test_an_unknown_choice_is_refused_with_the_valid_ones():
    with pytest.raises(a.UserError, match="'bpe-openai'"):
        a.set_tokenizer("bpe-openai:p50k_base")


async def test_a_run_counts_exact_tokens_and_the_providers_overhead_beside_them():
    a.set_tokenizer("bpe-openai:o200k_base")
    reply = a.ModelResponse(text="hello world", usage=a.Usage(20, 2, 1))
    model = a.ScriptedModel([reply], name="gpt-4o-mini")

    result = await a.run(a.Agent("w", "tiktoken is great!", model), "hello world")

    row = result.calls.iloc[0]
    assert row["tokens_method"] == "bpe-openai:o200k_base"
    assert row["tokens_in"] == 2 + 6  # the input and the system prompt, counted exactly
    assert row["tokens_out"] == 2
    assert row["provider_tokens_in"] == 20
    assert row["tokens_in_overhead"] == 20 - 8


TIKTOKEN_FILE_SHA256 = {
    # tiktoken_ext/openai_public.py: the expected_hash of the files tiktoken downloads
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}


@pytest.mark.parametrize("encoding", sorted(TIKTOKEN_FILE_SHA256))
def test_bpe_openai_holds_the_very_vocabulary_file_tiktoken_downloads(encoding):
    """Every (token bytes, rank) pair, written in tiktoken's file format, hashes to the
    published hash of tiktoken's file: the same vocabulary, so the same merges."""
    enc = bpe_openai.get_encoding(encoding)
    lines = []
    for rank in range(enc.n_vocab):
        if enc.is_special_token(rank):
            continue
        try:
            token = enc.decode_single_token_bytes(rank)
        except Exception:  # an unused id between the ranks and the special tokens
            continue
        lines.append(f"{base64.b64encode(token).decode()} {rank}\n")
    digest = hashlib.sha256("".join(lines).encode()).hexdigest()
    assert digest == TIKTOKEN_FILE_SHA256[encoding]


def _corpus(seed: int, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    pieces = [
        "the",
        " quick",
        "brown",
        "FOX",
        "jumps",
        "   ",
        "\n",
        "\n\n",
        "\t",
        "123",
        "4567",
        "3.14159",
        "don't",
        "'s",
        "naïve",
        "café",
        "日本語",
        "한국어",
        "Ελληνικά",
        "🙂",
        "🚀",
        '{"key": "value"}',
        "def f(x):\n    return x",
        "<|endoftext|>",
        "http://example.com/a?b=c",
        "!!!",
        "...",
        "—",
        "\u00a0",
        "Ω",
        "x" * 40,
        "ab" * 17,
        "  leading",
        "trailing  ",
    ]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(n)]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_bpe_openai_equals_tiktoken_on_a_generated_corpus(encoding, monkeypatch):
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed here")
    # Tests never reach the network: a download attempt fails at once, a cached file loads.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    try:
        reference = tiktoken.get_encoding(encoding)
    except Exception as exc:
        pytest.skip(f"tiktoken's {encoding} file is not on this machine ({type(exc).__name__})")
    ours = bpe_openai.get_encoding(encoding)
    texts = _corpus(int(os.environ.get("AGENTNB_CORPUS_SEED", "17")))
    assert [ours.encode_ordinary(t) for t in texts] == [reference.encode_ordinary(t) for t in texts]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_the_compiled_tokenizer_counts_what_the_package_counts(encoding):
    # agentnb loads bpe-openai's compiled module without its package (whose import decodes
    # every vocabulary in Python): the ids must be the package's encode_ordinary's.
    core = _tokenizers._bpe_openai_core(encoding)
    assert core is not None
    package = bpe_openai.get_encoding(encoding)
    texts = [*_corpus(23), "lone \ud800 surrogate", ""]
    assert [core(t) for t in texts] == [package.encode_ordinary(t) for t in texts]


def test_a_compiled_tokenizer_that_disagrees_with_the_published_ids_is_not_used(monkeypatch):
    monkeypatch.setitem(_tokenizers.KNOWN_IDS, "o200k_base", [1, 2])
    assert _tokenizers._bpe_openai_core("o200k_base") is None
    count = _tokenizers.load("bpe-openai", "o200k_base")  # the package's own API instead
    assert count is not None and count("hello world") == 2


def test_counting_with_bpe_openai_does_not_import_its_package():
    import subprocess
    import sys

    code = (
        "import sys; from agentnb.trace import _tokenizers as t; "
        "count = t.load('bpe-openai', 'o200k_base'); "
        "print(count('hello world'), 'bpe_openai.compat' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["2", "False"]
