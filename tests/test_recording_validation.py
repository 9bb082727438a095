"""replay() checks the whole recording when it loads it: a damaged file is one UserError that
names the file, the line and the field, never a KeyError or TypeError later in a run."""

from __future__ import annotations

import json

import pytest

import agentnb as a

HEADER = {"agentnb_recording": 1, "model": "m"}
REQUEST = {"system": "Work.", "messages": [{"role": "user", "content": "go"}], "tools": []}
RESPONSE = {
    "text": "done",
    "tool_calls": [],
    "usage": {"input_tokens": 3, "output_tokens": 1},
    "stop_reason": "stop",
    "model": "m",
    "events": [],
}


def write(path, *lines) -> None:
    path.write_bytes(
        b"\n".join(x if isinstance(x, bytes) else json.dumps(x).encode() for x in lines) + b"\n"
    )


def entry(**response) -> dict:
    return {"agent": "w", "request": REQUEST, "response": {**RESPONSE, **response}}


def test_a_valid_recording_replays(tmp_path):
    path = tmp_path / "ok.jsonl"
    write(path, HEADER, entry())

    result = a.run_sync(a.Agent("w", "Work.", a.replay(path)), "go")

    assert result.ok and result.output == "done"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3, 1)


def without(key: str) -> dict:
    return {k: v for k, v in RESPONSE.items() if k != key}


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (
            {"agent": "w", "request": REQUEST, "response": without("usage")},
            "response.usage: Field required",
        ),
        (
            entry(tool_calls=[{"id": "c1", "arguments": "{}"}]),
            "response.tool_calls.0.name: Field required",
        ),
        (entry(text=42), "response.text: Input should be a valid string"),
        (entry(usage={"input_tokens": "3", "output_tokens": 1}), "response.usage.input_tokens"),
        (entry(stop_reason="finished"), "response.stop_reason"),
        ({"agent": "w", "request": REQUEST}, "either a response or an error"),
        ({"agent": "w", "response": RESPONSE}, "request: Field required"),
        (
            {"agent": "w", "request": REQUEST, "error": {"message": "x"}},
            "error.type: Field required",
        ),
        ({**entry(), "extra": 1}, "extra: Extra inputs are not permitted"),
    ],
    ids=[
        "no-usage",
        "tool-call-without-name",
        "text-a-number",
        "tokens-a-string",
        "unknown-stop-reason",
        "no-outcome",
        "no-request",
        "error-without-type",
        "unknown-key",
    ],
)
def test_a_damaged_entry_names_file_line_and_field(tmp_path, line, says):
    path = tmp_path / "bad.jsonl"
    write(path, HEADER, entry(), line)

    with pytest.raises(a.UserError) as caught:
        a.replay(path)

    message = str(caught.value)
    assert message.startswith(f"{path}:3: ")
    assert says in message
    assert "\n" not in message


def test_an_unknown_format_version_is_refused_with_the_versions_read(tmp_path):
    path = tmp_path / "future.jsonl"
    write(path, {"agentnb_recording": 3, "model": "m"}, entry())

    with pytest.raises(
        a.UserError, match=r"future.jsonl:1: .*version 3; this agentnb reads version 1, 2"
    ):
        a.replay(path)


@pytest.mark.parametrize("version", [True, "1", 1.0, None])
def test_a_version_that_only_looks_like_1_is_refused(tmp_path, version):
    path = tmp_path / "odd.jsonl"
    write(path, {"agentnb_recording": version, "model": "m"}, entry())

    with pytest.raises(a.UserError, match="odd.jsonl:1"):
        a.replay(path)


def test_non_utf8_bytes_are_a_clear_error(tmp_path):
    path = tmp_path / "latin.jsonl"
    write(path, HEADER, b'{"agent": "caf\xe9"}')

    with pytest.raises(
        a.UserError, match=r"latin.jsonl:2 is not UTF-8 text \(byte 0xe9 at column 15\)"
    ):
        a.replay(path)


@pytest.mark.parametrize("line", [b"42", b'"text"', b"[1, 2]", b"null"])
def test_a_line_that_is_not_an_object_is_a_clear_error(tmp_path, line):
    path = tmp_path / "odd.jsonl"
    write(path, HEADER, line)

    with pytest.raises(a.UserError, match=r"odd.jsonl:2 is not a JSON object \(it is "):
        a.replay(path)


def test_a_recording_without_a_header_or_empty_is_refused(tmp_path):
    headless = tmp_path / "headless.jsonl"
    write(headless, entry())
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")

    with pytest.raises(a.UserError, match=r"headless.jsonl:1: a recording starts with its header"):
        a.replay(headless)
    with pytest.raises(a.UserError, match="is empty"):
        a.replay(empty)


def test_a_directory_or_a_non_path_is_a_user_error(tmp_path):
    with pytest.raises(a.UserError, match="is a directory; replay\\(\\) takes a recording file"):
        a.replay(tmp_path)
    with pytest.raises(a.UserError, match="is a directory; record\\(\\) writes a file"):
        a.record(a.ScriptedModel([]), tmp_path)
    with pytest.raises(a.UserError, match=r"replay\(path\) must be a file path .* got 42"):
        a.replay(42)  # type: ignore[arg-type]


def test_recordings_joined_end_to_end_replay_both_parts(tmp_path):
    path = tmp_path / "joined.jsonl"
    write(path, HEADER, entry(), HEADER, entry(text="again"))

    replay = a.replay(path)

    assert replay.remaining == 2
