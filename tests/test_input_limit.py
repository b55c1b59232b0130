"""A prompt past the model's input limit (litellm's table) is that row's error before any call, and
the dry run counts it; a model the table has no limit for is sent as before."""

from __future__ import annotations

from conftest import read_jsonl, write_jsonl
from helpers import landmark_rows as rows
from helpers import summary_of


def long_context_rows() -> list[dict]:
    words = " ".join(f"word{i} stands near item{i * 7} in the old quarter." for i in range(6000))  # ~60k tokens
    return [*rows(2), {"id": "huge", "request": "Where is landmark 9?", "context": [words]}]


# peer report (issue 29 item 13): a prompt past the model's input limit is a row error before the call; the dry run counts it
def test_a_prompt_past_the_input_limit_is_a_row_error_before_the_call(run_cli, tmp_path, server, transport):
    out, summary = tmp_path / "out.jsonl", tmp_path / "dry.json"
    source = write_jsonl(tmp_path / "in.jsonl", long_context_rows())
    dry = run_cli(["score", source, "-m", "sufficiency", "--model", "openai/gpt-4", "--dry-run", "--summary-json", str(summary)])
    assert dry.code == 0, dry.stderr
    estimate = summary_of(summary)["dry_run"]["metrics"]["sufficiency"]
    assert estimate["over_input_limit"] == 1 and estimate["calls"] == 2
    assert "1 row over the model's input limit" in dry.stderr + dry.stdout  # said "1 rows" (issue 44 item 13)
    result = run_cli(["score", source, "-m", "sufficiency", "--model", "openai/gpt-4", "-o", str(out), "--max-error-rate", "1",
                      "--min-pass-rate", "0"])
    written = {r["id"]: r for r in read_jsonl(out)}
    assert result.code in (0, 1), result.stderr
    assert server.calls == 2  # the two short rows; the long one never went out
    error = written["huge"]["sufficiency_error"]
    assert written["huge"]["sufficiency_status"] == "error"
    assert error.startswith("prompt of ") and "tokens exceeds openai/gpt-4's input limit of 8192" in error
    assert int(error.split()[2]) > 8192
    assert written["huge"]["sufficiency_prompt_tokens"] is None  # no call made
    strict = run_cli(["score", source, "-m", "sufficiency", "--model", "openai/gpt-4", "--min-pass-rate", "0"])
    assert strict.code == 2 and "1 from unusable input" in strict.stderr  # the row's input is at fault, not the judge
    assert server.calls == 2  # the short rows come from the cache; the long one is refused again


# peer report (issue 29 item 13): a prompt past the model's input limit is a row error before the call; the dry run counts it
def test_the_input_limit_in_process_and_no_limit_when_the_table_has_none():
    from ragjudge import _loop, load_config
    from ragjudge.fakeserver import FakeTransport
    from ragjudge.model import Model
    from ragjudge.types import Call, Verdict

    long = [{"role": "user", "content": "alpha beta gamma delta " * 4000}]  # ~16k tokens
    call = Call(metric="m", version="v", mode=None, messages=long, response_format=None)

    def run(provider_model: str) -> tuple[Verdict, FakeTransport]:
        fake = FakeTransport(provider_model)
        fake.replies.append('{"verdict": "yes"}')
        model = Model(load_config(None, {"judge": {"model": provider_model}}).judge, None, fake)
        try:
            return _loop.run(model.call(call, lambda reply, _: Verdict(metric="m", status="ok", score=1.0))), fake
        finally:
            _loop.run(model.aclose())

    refused, fake = run("openai/gpt-4")  # 8192 tokens
    assert refused.status == "error" and refused.input_error and not fake.requests
    assert "exceeds openai/gpt-4's input limit of 8192" in refused.error
    taken, fake = run("openai/gpt-4o-mini")  # 128000 tokens: it fits
    assert taken.status == "ok" and len(fake.requests) == 1
    unknown, fake = run("openai/fake-judge")  # no row in the table: no limit known, sent as before
    assert unknown.status == "ok" and len(fake.requests) == 1
