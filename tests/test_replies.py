"""What a provider's reply looks like on the wire, over both transports (``transport``): a
message whose ``content`` is a list of parts (issue 44 item 1, simonw/llm-mistral#38), a server
that asks to retry at once while it is overloaded (item 2, will-ockmore/httpx-retries#13), and
a reply that needs more than the default max_tokens (item 3, vibrantlabsai/ragas#1150)."""

from __future__ import annotations

import json

from conftest import read_jsonl, write_jsonl
from helpers import THREE_COMPLETE_ROWS as ROWS
from helpers import landmark_rows as rows

YES = {"facts": [{"fact": 1, "supported": True, "passages": [1], "reason": "stated"}], "rationale": "The passage says it.", "verdict": "yes"}


def test_a_reply_in_parts_is_judged_on_its_text_parts(run_cli, server, transport, tmp_path):
    # it ended the run with "unexpected TypeError", no output, the two good rows lost
    text = json.dumps(YES)
    server.replies.append([{"type": "text", "text": text[:20]}, {"type": "text", "text": text[20:]}])
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS), "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    assert [r["sufficiency_status"] for r in read_jsonl(out)] == ["ok"] * 3


def test_a_reply_with_no_text_part_is_that_rows_error_naming_the_shape(run_cli, server, transport, tmp_path):
    server.replies.append([{"type": "image_url", "image_url": {"url": "data:,"}}])
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS), "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0",
                      "--max-error-rate", "0.5", "--set", "judge.max_retries=0"])
    rows = read_jsonl(out)
    assert result.code == 0, result.stderr
    assert [r["sufficiency_status"] for r in rows] == ["error", "ok", "ok"]
    if transport == "auto":  # litellm refuses such a reply itself ("Invalid response object"): the row's error all the same
        assert rows[0]["sufficiency_error"] == ("judge call failed: the reply's content is a list of 1 part(s) of type image_url with "
                                                "no text part; the judge must answer in text")
    assert "\n" not in rows[0]["sufficiency_error"]


def _real_backoff(monkeypatch):
    """The backoff's first steps as shipped (the tests' own is 50 times shorter)."""
    monkeypatch.setattr("ragjudge.model.retry.BACKOFF_INITIAL_S", 0.25)
    monkeypatch.setattr("ragjudge.model.retry.BACKOFF_MAX_S", 2.0)


def test_a_server_asking_to_retry_at_once_while_overloaded_gets_the_backoff(run_cli, server, transport, tmp_path, monkeypatch):
    # Retry-After: 0 made seven attempts back to back: 0 of 2 rows judged, exit 3
    _real_backoff(monkeypatch)
    server.overloaded_for = 1.0
    server.retry_after = 0.0
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS[:2]), "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    assert [r["sufficiency_status"] for r in read_jsonl(out)] == ["ok", "ok"]
    assert 3 <= server.calls <= 12 and server.statuses[429] >= 1  # waited out, not hammered


def test_a_retry_after_date_in_the_past_gets_the_backoff_too(run_cli, server, transport, tmp_path, monkeypatch):
    _real_backoff(monkeypatch)
    server.overloaded_for = 1.0
    server.retry_after = -3600.0  # an HTTP date an hour ago
    server.retry_header = "http-date"
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS[:1]), "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr and read_jsonl(out)[0]["sufficiency_status"] == "ok"


def test_sixty_expected_facts_are_judged_at_the_default_settings(run_cli, server, transport, tmp_path):
    # the reply to sixty facts was cut at max_tokens 1024: error, exit 3
    facts = [f"Landmark 1 has property {i} of the city" for i in range(60)]
    row = {"id": "many", "request": "What is landmark 1 like?", "context": [" ".join(facts)], "expected_facts": facts}
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [row]), "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    assert read_jsonl(out)[0]["sufficiency_status"] == "ok" and read_jsonl(out)[0]["sufficiency_score"] == 1.0


# peer report (issue 29 item 14): a reasoning model that spent its output tokens thinking
def test_a_reply_of_reasoning_only_names_the_setting_to_raise(run_cli, tmp_path, server, transport):
    server.reasoning_only = 1
    out, config = tmp_path / "out.jsonl", tmp_path / "c.yaml"
    config.write_text("judge:\n  max_tokens: 300\n")
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(1)), "-m", "sufficiency", "-o", str(out), "-c", str(config)])
    row = read_jsonl(out)[0]
    assert row["sufficiency_status"] == "error" and server.calls == 1  # asking again would spend the same way
    assert row["sufficiency_error"].startswith("the model spent its output tokens on reasoning")
    assert "raise judge.max_tokens (now 300)" in row["sufficiency_error"]
    assert row["sufficiency_raw"].startswith("Let me weigh each passage")
    assert result.code == 3


# peer report (issue 29 item 14): a reasoning model that spent its output tokens thinking
def test_reasoning_under_the_other_field_name_is_recognised_too(run_cli, tmp_path, server, transport):
    server.reasoning_only, server.reasoning_field = 1, "reasoning"
    out = tmp_path / "out.jsonl"
    run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(2)), "-m", "completeness", "-o", str(out), "--concurrency", "1",
             "--max-error-rate", "1", "--min-pass-rate", "0"])
    errors = [r["completeness_error"] for r in read_jsonl(out) if r["completeness_status"] == "error"]
    assert len(errors) == 1 and "spent its output tokens on reasoning" in errors[0] and "judge.max_tokens" in errors[0]
