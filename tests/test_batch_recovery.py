"""A batch run after the provider's answer went missing (issue 60, items 6 and 7), against the fake
server's batch APIs and their knobs: a create that made the batch but answered 504 (or 500), a
process killed between the create and writing the id down, a listing that does not reach back
far enough, and a batch that answers 404 right after it was created. The rule: a batch is never
submitted twice unless the run says it accepts the risk (``--batch-resubmit``)."""

from __future__ import annotations

import json

import pytest

from ragjudge.run.batch import BatchUnsure
from ragjudge.run import ScoreRequest, run
from test_batch import claude, config, finish, read, rows


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows(4)), encoding="utf-8")
    return str(path)


@pytest.fixture(autouse=True)
def _fast_batch_client(monkeypatch):
    monkeypatch.setattr("ragjudge.transports.openai_batch.BACKOFF_S", 0.01)


ROUND_1 = 8  # 4 sufficiency calls and 4 completeness statements calls (tests/test_batch.py's rows)


def manifest_of(out):
    return json.loads((out.parent / (out.name + ".batch") / "manifest.json").read_text())


def claude_finish(server, table, out, cache, **request):
    """Run the Anthropic request until it is not exit 4; the last outcome."""
    for _ in range(8):
        outcome = run(ScoreRequest(table, output=str(out), **request), claude(server, cache))
        if outcome.exit_code != 4:
            return outcome
    raise AssertionError("still submitted after 8 runs")


# -- item 6: a batch created twice after a lost create answer ------------------------------------

def test_anthropic_504_after_the_batch_was_made_is_never_submitted_twice(server, table, tmp_path, monkeypatch):
    """The issue's case (QwenLM/qwen-code#11874): the gateway answers 504 after the batch was made."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    server.batch_lost_creates, server.batch_lost_status = 1, 504
    out = tmp_path / "scored.jsonl"
    with pytest.raises(BatchUnsure, match=r"504.*may have made that batch.*msgbatch_fake_1.*billed twice.*--batch-resubmit"):
        run(ScoreRequest(table, output=str(out)), claude(server, tmp_path / "cache"))
    assert list(server.batches) == ["msgbatch_fake_1"] and server.batch_creates == 1
    # a later process: the batch still runs, its requests cannot be read: refused again, nothing submitted
    with pytest.raises(BatchUnsure, match="still running"):
        run(ScoreRequest(table, output=str(out)), claude(server, tmp_path / "cache"))
    assert server.batch_creates == 1
    server.end_batches()  # it ends at the provider: its results name this run's custom ids, so it is this run's batch
    outcome = claude_finish(server, table, out, tmp_path / "cache")
    assert outcome.exit_code == 0
    assert list(server.batches) == ["msgbatch_fake_1", "msgbatch_fake_2"]  # round 1 (adopted) and round 2, no other
    assert len(server.batch_submitted) == 12 and set(server.batch_submitted.values()) == {1}
    assert [b["id"] for b in manifest_of(out)["batches"]] == ["msgbatch_fake_1", "msgbatch_fake_2"]
    assert list(read(out)["completeness_status"]) == ["ok"] * 4


def test_anthropic_create_that_made_nothing_is_submitted_again_past_other_processes_batches(server, table, tmp_path, monkeypatch):
    """The second shape: the 504 came before anything was made. The listing holds other processes'
    batches since then (one ended with other custom ids and as many requests, one running with
    another number): each is ruled out, so the calls go again, once."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    server.batch_refused_creates, server.batch_lost_status = 1, 504
    out = tmp_path / "scored.jsonl"
    with pytest.raises(Exception, match="HTTP 504") as raised:  # the create's own error: nothing may exist, nothing to doubt
        run(ScoreRequest(table, output=str(out)), claude(server, tmp_path / "cache"))
    assert not isinstance(raised.value, BatchUnsure) and raised.value.exit_code == 3
    server.foreign_batches(1, size=ROUND_1, anthropic=True)
    server.end_batches()
    server.foreign_batches(1, size=3, anthropic=True)
    outcome = claude_finish(server, table, out, tmp_path / "cache")
    assert outcome.exit_code == 0
    ours = {cid: n for cid, n in server.batch_submitted.items() if not cid.startswith("other-")}
    assert len(ours) == 12 and set(ours.values()) == {1}
    assert server.batch_creates == 3  # the refused one, then rounds 1 and 2


def test_batch_resubmit_accepts_the_risk_and_says_so_on_the_command_line(run_cli, server, table, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    server.batch_lost_creates, server.batch_lost_status = 1, 504
    out = tmp_path / "scored.jsonl"
    args = ["score", table, "-o", str(out), "--batch", "--model", "anthropic/claude-haiku-4-5", "--api-base", server.url[:-3],
            "--min-pass-rate", "0", "--set", "judge.batch_poll=0.01"]
    refused = run_cli(args, judge=False)
    assert refused.code == 3, refused.stderr
    said = " ".join((refused.stdout + refused.stderr).split())
    assert "billed twice, so nothing was submitted" in said and "--batch-resubmit" in said
    assert server.batch_creates == 1
    accepted = run_cli([*args, "--batch-resubmit"], judge=False)
    assert accepted.code == 4, accepted.stderr
    assert server.batch_creates == 2 and sorted(server.batch_submitted.values()) == [2] * ROUND_1  # the risk taken: sent twice
    help_text = " ".join(run_cli(["score", "--help"], judge=False).stdout.split())
    assert "--batch-resubmit" in help_text and "billed twice" in help_text


def _killed_before_the_id_was_saved(out):
    """Leave the manifest as a process killed between the create and saving the id leaves it: the
    entry written with create_tried before the create, its id never written."""
    path = out.parent / (out.name + ".batch") / "manifest.json"
    data = json.loads(path.read_text())
    data["batches"][-1].update(id=None, status="uploaded", create_tried=True)
    path.write_text(json.dumps(data))


def test_openai_batch_made_by_a_killed_process_is_found_past_the_listing_s_first_page(server, table, tmp_path):
    """Item 6's OpenAI shape: 150 other batches were made since; the batch is 151st newest, past
    the 100 the listing's first page holds (the old code looked no further and created it again)."""
    out = tmp_path / "scored.jsonl"
    assert run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache")).exit_code == 4
    _killed_before_the_id_was_saved(out)
    server.foreign_batches(150)
    outcome, _ = finish(server, table, out, tmp_path / "cache")
    assert outcome.exit_code == 0
    assert server.batch_creates == 2  # rounds 1 and 2: round 1 found, not made again
    ours = {cid: n for cid, n in server.batch_submitted.items() if not cid.startswith("other-")}
    assert len(ours) == 12 and set(ours.values()) == {1}
    assert manifest_of(out)["batches"][0]["id"] == "batch_fake_1"


def test_openai_listing_that_does_not_reach_back_refuses_until_told(server, table, tmp_path, monkeypatch):
    monkeypatch.setattr("ragjudge.transports.openai_batch.LIST_PAGES", 1)  # the listing read one page deep
    out = tmp_path / "scored.jsonl"
    assert run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache")).exit_code == 4
    _killed_before_the_id_was_saved(out)
    server.foreign_batches(150)
    with pytest.raises(BatchUnsure, match="did not reach back to .* within 1 pages of 100 batches.*--batch-resubmit"):
        run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache"))
    assert server.batch_creates == 1
    again = run(ScoreRequest(table, output=str(out), batch_resubmit=True), config(server, tmp_path / "cache"))
    assert again.exit_code == 4 and server.batch_creates == 2  # created again: the risk accepted


def test_batch_resubmit_without_batch_is_named(table):
    from ragjudge import load_config
    from ragjudge.errors import ConfigError

    with pytest.raises(ConfigError, match=r"batch_resubmit=True submits again .* add judge.batch: true"):
        run(ScoreRequest(table, batch_resubmit=True), load_config(None, {"judge": {"model": "openai/gpt-4o-mini"}}))


# -- item 7: a transient 404 right after create ---------------------------------------------------

def test_batch_wait_polls_again_a_batch_that_answers_404_right_after_its_create(server, table, tmp_path):
    """The issue's case (anthropics/anthropic-sdk-python#1432): --batch-wait ended with exit 3 and no table."""
    server.batch_not_found_polls = 2  # each batch: its first two polls answer 404
    heard = []
    out = tmp_path / "scored.jsonl"
    outcome = run(ScoreRequest(table, output=str(out), batch_wait=True), config(server, tmp_path / "cache"), on_event=heard.append)
    assert outcome.exit_code == 0
    assert list(read(out)["completeness_status"]) == ["ok"] * 4 and list(read(out)["sufficiency_status"]) == ["ok"] * 4
    assert server.statuses[404] == 4 and server.batch_creates == 2 and set(server.batch_submitted.values()) == {1}
    statuses = [e.status for e in heard if type(e).__name__ == "BatchProgress"]
    assert statuses.count("just created, not found yet") == 4 and statuses[-1] == "completed"


def test_anthropic_batch_answering_404_on_the_next_run_is_still_pending(server, table, tmp_path, monkeypatch):
    """The second shape: no --batch-wait; the run after the submit meets the 404, says the batch is
    not found yet and exits 4 (it was exit 3), and a later run collects."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    server.batch_not_found_polls = 1
    out = tmp_path / "scored.jsonl"
    assert run(ScoreRequest(table, output=str(out)), claude(server, tmp_path / "cache")).exit_code == 4
    second = run(ScoreRequest(table, output=str(out)), claude(server, tmp_path / "cache"))
    assert second.exit_code == 4 and server.statuses[404] == 1
    assert "batch: 8 call(s) still in 1 open batch(es): msgbatch_fake_1: just created, not found yet (0/8 done)" in second.batch.lines
    outcome = claude_finish(server, table, out, tmp_path / "cache")
    assert outcome.exit_code == 0 and set(server.batch_submitted.values()) == {1} and len(server.batch_submitted) == 12


def test_a_batch_that_answers_404_long_after_its_create_is_still_an_error(server, table, tmp_path):
    """The bound: a batch created an hour ago that answers 404 is gone (another key or endpoint), exit 3 naming it."""
    from ragjudge.errors import ProviderFatalError

    out = tmp_path / "scored.jsonl"
    assert run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache")).exit_code == 4
    path = out.parent / (out.name + ".batch") / "manifest.json"
    data = json.loads(path.read_text())
    data["batches"][0]["created"] -= 3600
    path.write_text(json.dumps(data))
    server.batches.pop("batch_fake_1")
    with pytest.raises(ProviderFatalError, match=r"batch batch_fake_1 is not found \(HTTP 404.*\) 36\d\d s after it was created"):
        run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache"))


def test_batch_resubmit_given_before_the_504_leaves_the_resubmit_to_the_next_run(server, table, tmp_path, monkeypatch):
    """With --batch-resubmit already given, a 504 on the create is said as it is (exit 3, not the
    warning the flag answers), and nothing is created again in that process; the next run submits."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    server.batch_lost_creates, server.batch_lost_status = 1, 504
    out = tmp_path / "scored.jsonl"
    with pytest.raises(Exception, match="HTTP 504") as raised:
        run(ScoreRequest(table, output=str(out), batch_resubmit=True), claude(server, tmp_path / "cache"))
    assert not isinstance(raised.value, BatchUnsure) and server.batch_creates == 1
    assert run(ScoreRequest(table, output=str(out), batch_resubmit=True), claude(server, tmp_path / "cache")).exit_code == 4
    assert server.batch_creates == 2
