"""A recording holds the model settings of each call, and a replay compares them.

The canonical request (what "characters sent" measures) does not hold settings, so they are
written beside it, and only when some are set. Recordings of format version 1, which had no
settings, still replay: their settings are not compared.
"""

from __future__ import annotations

import json

import pytest

import agentnb as a

COOL = a.ModelSettings(temperature=0.2, stop=["END"])


def agent(model: a.ModelClient, settings: a.ModelSettings | None = COOL) -> a.Agent:
    return a.Agent("writer", "You write.", model, model_settings=settings)


def recorded(tmp_path, settings: a.ModelSettings | None = COOL):
    path = tmp_path / "run.jsonl"
    scripted = a.ScriptedModel([a.say("done")])
    result = a.run_sync(agent(a.record(scripted, path), settings), "go")
    assert result.ok, result.error
    assert scripted.requests[0].settings == settings  # what the model received
    return path, result


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_call_is_written_with_the_settings_set(tmp_path):
    path, _ = recorded(tmp_path)
    header, call = lines(path)

    assert header["agentnb_recording"] == 3
    assert list(call) == ["agent", "request", "settings", "response", "sha256"]
    assert call["settings"] == {"temperature": 0.2, "stop": ["END"]}
    assert "settings" not in call["request"]  # the canonical request is unchanged


def test_no_settings_no_field_and_the_same_characters_sent(tmp_path):
    path, plain = recorded(tmp_path, settings=None)
    (tmp_path / "with").mkdir()
    _, cool = recorded(tmp_path / "with")

    assert list(lines(path)[1]) == ["agent", "request", "response", "sha256"]
    assert cool.chars_in == plain.chars_in  # settings are not "characters sent"


def test_the_same_settings_replay(tmp_path):
    path, original = recorded(tmp_path)
    replay = a.replay(path)

    result = a.run_sync(agent(replay), "go")

    assert result.ok, result.error
    assert result.output == original.output
    assert replay.requests[0].settings == COOL
    replay.assert_complete()


@pytest.mark.parametrize(
    ("settings", "names", "recorded_text", "sent_text"),
    [
        (a.ModelSettings(temperature=0.7, stop=["END"]), "settings.temperature", "0.2", "0.7"),
        (a.ModelSettings(temperature=0.2), "settings.stop", '["END"]', "<absent>"),
        (None, "settings.temperature", "0.2", "<absent>"),
        (
            a.ModelSettings(temperature=0.2, stop=["END"], seed=7),
            "settings.seed",
            "<absent>",
            "7",
        ),
    ],
)
def test_other_settings_are_a_mismatch_naming_the_setting(
    tmp_path, settings, names, recorded_text, sent_text
):
    path, _ = recorded(tmp_path)
    replay = a.replay(path)

    result = a.run_sync(agent(replay, settings), "go")

    assert not result.ok
    assert isinstance(result.error, a.ReplayMismatch)
    message = str(result.error)
    assert f"{names} was recorded {recorded_text}, sent {sent_text}" in message
    assert "line 2" in message and "other model settings" in message
    assert replay.remaining == 1  # the recorded call was not used up


def test_settings_recorded_where_none_are_sent_is_a_mismatch_too(tmp_path):
    path, _ = recorded(tmp_path, settings=None)

    result = a.run_sync(agent(a.replay(path), COOL), "go")

    assert isinstance(result.error, a.ReplayMismatch)
    assert "settings.temperature was recorded <absent>, sent 0.2" in str(result.error)


def version_1(tmp_path, **extra) -> object:
    """A recording as version 1 wrote it: the same lines, without settings."""
    path, _ = recorded(tmp_path, settings=None)
    header, call = lines(path)
    old = tmp_path / "v1.jsonl"
    old.write_text(
        json.dumps({**header, "agentnb_recording": 1})
        + "\n"
        + json.dumps({**call, **extra})
        + "\n",
        encoding="utf-8",
    )
    return old


def test_a_version_1_recording_replays_whatever_the_settings(tmp_path):
    old = version_1(tmp_path)
    replay = a.replay(old)

    result = a.run_sync(agent(replay, a.ModelSettings(temperature=1.5)), "go")

    assert result.ok, result.error
    assert result.output == "done"
    assert replay.requests[0].settings == a.ModelSettings(temperature=1.5)


def test_a_version_1_line_with_settings_is_refused(tmp_path):
    old = version_1(tmp_path, settings={"temperature": 0.2})

    with pytest.raises(a.UserError, match=r"v1.jsonl:2: settings: a version-1 recording has none"):
        a.replay(old)


def test_recorded_settings_are_checked_on_load(tmp_path):
    path, _ = recorded(tmp_path)
    header, call = lines(path)
    path.write_text(
        json.dumps(header) + "\n" + json.dumps({**call, "settings": "hot"}) + "\n",
        encoding="utf-8",
    )

    with pytest.raises(a.UserError, match=r"run.jsonl:2: settings: "):
        a.replay(path)
