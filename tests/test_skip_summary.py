"""The suite's last line names the optional parts that did not run, so a newcomer whose browser
test skipped (no Chromium) sees it without reading every skip."""

from skip_reasons import LOCAL_HINT, untested_parts


def test_each_optional_part_is_named_from_its_skip_reason():
    reasons = [
        "tests/notebook/test_browser.py:114: no Chromium binary found (install Debian's `chromium`)",
        f"tests/models/test_local_model.py: {LOCAL_HINT}",
        "needs OPENAI_API_KEY and AGENTNB_LIVE=1 (reaches api.openai.com)",
    ]
    parts = untested_parts(reasons)
    assert [p.split(" (")[0] for p in parts] == [
        "the real local model",
        "the browser tests",
        "the live OpenAI endpoint",
    ]


def test_skips_of_no_optional_part_name_none():
    assert untested_parts(["needs POSIX signals"]) == []
    assert untested_parts([]) == []
