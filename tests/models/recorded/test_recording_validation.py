"""replay() checks the whole recording when it loads it: a damaged file is one UserError that
names the file, the line and the field, never a KeyError or TypeError later in a run."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import pytest

import agentnb as a
from agentnb.models.recorded import file as _recording_file

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
    write(path, {"agentnb_recording": 4, "model": "m"}, entry())

    with pytest.raises(
        a.UserError, match=r"future.jsonl:1: .*version 4; this agentnb reads version 1, 2, 3"
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


# -- what is read at all: regular files, lines of bounded size and depth


def test_a_device_is_refused_before_it_is_read():
    with pytest.raises(a.UserError, match=r"'/dev/zero' is not a regular file"):
        a.replay("/dev/zero")


def test_a_named_pipe_is_refused_without_blocking(tmp_path):
    pipe = tmp_path / "pipe.jsonl"
    os.mkfifo(pipe)  # opening it for reading would wait for a writer forever

    with pytest.raises(a.UserError, match=r"pipe.jsonl' is not a regular file"):
        a.replay(pipe)


def test_a_line_nested_too_deeply_is_refused_naming_it(tmp_path):
    path = tmp_path / "deep.jsonl"
    write(path, HEADER, b"[" * 100_000 + b"]" * 100_000)

    with pytest.raises(a.UserError, match=r"deep.jsonl:2 is JSON nested too deeply"):
        a.replay(path)


def test_a_line_past_the_bound_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(_recording_file, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "long.jsonl"
    write(path, HEADER, entry(text="x" * 2000))

    with pytest.raises(a.UserError, match=r"long.jsonl:2 is longer than 0 MiB"):
        a.replay(path)


def test_the_line_bound_is_far_above_a_recorded_answer():
    assert _recording_file.MAX_LINE_BYTES >= 64 * 2**20


async def test_a_20_mb_recorded_answer_replays(tmp_path):
    path = tmp_path / "big.jsonl"
    big = "y" * 20_000_000
    request = a.ModelRequest("Work.", [a.Message.user("go")], [], None, "w")
    recorder = a.record(a.ScriptedModel([a.say(big)]), path)
    await recorder.request(request)

    replayed = await a.replay(path).request(request)

    assert path.stat().st_size > 20_000_000
    assert replayed.text == big


# -- checksums: a line changed after it was recorded is refused, naming it


def _recorded(tmp_path) -> tuple:
    path = tmp_path / "run.jsonl"
    a.run_sync(a.Agent("w", "Work.", a.record(a.ScriptedModel([a.say("done")]), path)), "go")
    return path, path.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (
            lambda line: line.replace('"text":"done"', '"text":"DONE"'),
            "does not match its checksum",
        ),
        (
            lambda line: re.sub(r'"output_tokens":(\d+|null)', '"output_tokens":123456', line),
            "does not match",
        ),
        (lambda line: re.sub(r',"sha256":"[0-9a-f]+"', "", line), "has no checksum"),
    ],
    ids=["changed-text", "changed-usage", "checksum-removed"],
)
def test_a_hand_edited_entry_is_refused_naming_its_line(tmp_path, edit, says):
    path, (header, line) = _recorded(tmp_path)
    a.replay(path)  # as recorded: fine
    path.write_text(f"{header}\n{edit(line)}\n", encoding="utf-8")

    with pytest.raises(a.UserError, match=rf"run.jsonl:2: the entry {says}"):
        a.replay(path)


def test_a_negative_usage_is_refused_in_any_version(tmp_path):
    path = tmp_path / "negative.jsonl"
    write(path, HEADER, entry(usage={"input_tokens": -3, "output_tokens": 1}))

    with pytest.raises(a.UserError, match=r"negative.jsonl:2: response.usage.input_tokens"):
        a.replay(path)


def test_an_entry_appended_to_an_old_recording_is_checked_and_the_old_ones_are_not(tmp_path):
    path = tmp_path / "old.jsonl"
    write(path, HEADER, entry())
    request = a.ModelRequest("Work.", [a.Message.user("again")], [], None, "w")
    asyncio.run(a.record(a.ScriptedModel([a.say("new")]), path, append=True).request(request))
    assert a.replay(path).remaining == 2
    header, old, new = path.read_text(encoding="utf-8").splitlines()
    path.write_text(f"{header}\n{old}\n{new.replace('new', 'NEW')}\n", encoding="utf-8")

    with pytest.raises(a.UserError, match=r"old.jsonl:3: the entry does not match its checksum"):
        a.replay(path)


def test_the_shipped_recordings_replay_unchanged():
    shipped = sorted(Path(__file__).parents[3].glob("notebooks/recordings/*.jsonl"))
    assert shipped
    for path in shipped:
        assert a.replay(path).remaining > 0
