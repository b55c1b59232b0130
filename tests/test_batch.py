"""Judging through the provider's batch API (``--batch``, ``ragjudge.run.batch``), against the fake
server's OpenAI Batch API (files, batches) and its knobs: submit and exit 4, collect in a later
process, completeness's two rounds, failed, expired and shuffled lines, a 429 and a lost create,
the batch price, and verdicts equal to a direct run's on the same replies."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ragjudge import load_config
from ragjudge.errors import EXIT_SUBMITTED
from ragjudge.run import ScoreRequest, run

MODEL = "openai/gpt-4o-mini"  # priced in litellm's table, batch price included (half)
COLUMNS = ["sufficiency_score", "sufficiency_status", "sufficiency_rationale", "completeness_score", "completeness_status",
           "completeness_missing", "completeness_rationale"]


def rows(count: int) -> list[dict]:
    """``count`` rows that both metrics judge (completeness: two calls a row, statements then coverage)."""
    out = []
    for i in range(count):
        truth = f"Paris is the capital of France number {i}. The Seine flows through Paris {i}."
        out.append({"id": f"r{i}", "request": f"What is the capital of France {i}?",
                    "context": [f"Paris is the capital of France number {i}.", "The Seine is a river."],
                    "expected_response": truth,
                    "response": f"Paris is the capital of France number {i}." if i % 2 else f"Lyon {i}."})
    return out


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows(4)), encoding="utf-8")
    return str(path)


@pytest.fixture(autouse=True)
def _fast_batch_client(monkeypatch):
    monkeypatch.setattr("ragjudge.transports.openai_batch.BACKOFF_S", 0.01)


def config(server, cache, **judge):
    settings = {"model": MODEL, "api_base": server.url, "batch": True, "batch_poll": 0.01, **judge}
    return load_config(None, {"judge": settings, "cache": {"dir": str(cache)}, "gate": {"min_pass_rate": 0}})


def read(path):
    import pandas as pd

    return pd.read_json(path, lines=True)


def finish(server, table, out, cache, limit=8, **judge):
    """Run the same request until it is not exit 4 (each run a later "process": nothing kept in
    memory between them but the cache and the manifest). Returns the last outcome and the number of runs."""
    for attempt in range(1, limit + 1):
        outcome = run(ScoreRequest(table, output=str(out)), config(server, cache, **judge))
        if outcome.exit_code != EXIT_SUBMITTED:
            return outcome, attempt
    raise AssertionError(f"still submitted after {limit} runs")


def direct(server, table, out, cache):
    settings = {"model": MODEL, "api_base": server.url}
    return run(ScoreRequest(table, output=str(out)), load_config(None, {"judge": settings, "cache": {"dir": str(cache)},
                                                                      "gate": {"min_pass_rate": 0}}))


def test_batch_submits_exits_4_and_a_later_run_collects_both_rounds(server, table, tmp_path):
    out = tmp_path / "scored.jsonl"
    first = run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache"))
    assert first.exit_code == EXIT_SUBMITTED == 4
    assert not out.exists()  # submitted, not judged: no table
    manifest = json.loads((tmp_path / "scored.jsonl.batch" / "manifest.json").read_text())
    assert [b["id"] for b in manifest["batches"]] == ["batch_fake_1"]
    # round 1: 4 sufficiency calls and 4 statements calls (completeness's coverage calls need their replies)
    assert len(server.batch_submitted) == 8 and server.calls == 0
    assert any("run the same command again" in line for line in first.batch.lines)

    second = run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache"))
    assert second.exit_code == EXIT_SUBMITTED  # round 2: the coverage calls
    assert len(server.batch_submitted) == 12
    third = run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache"))
    assert third.exit_code == 0
    assert set(server.batch_submitted.values()) == {1}  # each call submitted once
    assert server.calls == 0  # no direct call
    scored = read(out)
    assert list(scored["sufficiency_status"]) == ["ok"] * 4 and list(scored["completeness_status"]) == ["ok"] * 4
    # a fourth run is a warm re-run: nothing submitted, no cost
    again = run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache"))
    assert again.exit_code == 0 and len(server.batch_submitted) == 12 and server.batch_creates == 2
    assert again.result.summary.metrics["sufficiency"].cached == 4


def test_batch_verdicts_equal_a_direct_run_at_half_the_cost(server, table, tmp_path):
    outcome, runs = finish(server, table, tmp_path / "batch.jsonl", tmp_path / "cache-batch")
    assert runs == 3 and outcome.exit_code == 0
    direct(server, table, tmp_path / "direct.jsonl", tmp_path / "cache-direct")
    batched, plain = read(tmp_path / "batch.jsonl"), read(tmp_path / "direct.jsonl")
    assert batched[COLUMNS].to_dict("records") == plain[COLUMNS].to_dict("records")
    for metric in ("sufficiency", "completeness"):
        assert list(batched[f"{metric}_prompt_tokens"]) == list(plain[f"{metric}_prompt_tokens"])
        assert batched[f"{metric}_cost_usd"].sum() == pytest.approx(plain[f"{metric}_cost_usd"].sum() / 2)
        assert outcome.result.summary.metrics[metric].usage.cost_usd == pytest.approx(batched[f"{metric}_cost_usd"].sum())


def test_batch_wait_polls_until_done_and_finishes(server, table, tmp_path):
    server.batch_polls = 3
    heard = []
    out = tmp_path / "scored.jsonl"
    outcome = run(ScoreRequest(table, output=str(out), batch_wait=True), config(server, tmp_path / "cache"), on_event=heard.append)
    assert outcome.exit_code == 0
    progress = [e for e in heard if type(e).__name__ == "BatchProgress"]
    assert progress[0].done < progress[0].total and progress[-1].done == progress[-1].total  # the provider's counts
    assert {e.status for e in progress} >= {"in_progress", "completed"}
    assert server.batch_creates == 2 and set(server.batch_submitted.values()) == {1}
    assert list(read(out)["completeness_status"]) == ["ok"] * 4


def test_process_killed_between_submit_and_collect(server, table, tmp_path):
    """The submitting process is another one, gone before collection; this one collects, and the
    server saw each call once."""
    out = tmp_path / "scored.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "ragjudge", "score", table, "-o", str(out), "--batch", "--model", MODEL, "--api-base",
               server.url, "--cache-dir", str(tmp_path / "cache"), "--min-pass-rate", "0", "--set", "judge.batch_poll=0.01"]
    submitted = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert submitted.returncode == 4, submitted.stderr
    assert "submitted, not yet judged (exit 4)" in submitted.stderr
    outcome, runs = finish(server, table, out, tmp_path / "cache")
    assert outcome.exit_code == 0 and runs == 2  # round 1 collected, round 2 submitted; then collected
    assert set(server.batch_submitted.values()) == {1} and len(server.batch_submitted) == 12


def test_lost_create_is_found_by_its_input_file_not_made_twice(server, table, tmp_path):
    server.batch_lost_creates = 1  # the batch is made, the answer is a 500
    outcome, _ = finish(server, table, tmp_path / "scored.jsonl", tmp_path / "cache")
    assert outcome.exit_code == 0
    assert len(server.batches) == 2 and set(server.batch_submitted.values()) == {1}


def test_429_on_create_is_retried(server, table, tmp_path):
    server.batch_429 = 2
    outcome, runs = finish(server, table, tmp_path / "scored.jsonl", tmp_path / "cache")
    assert outcome.exit_code == 0 and runs == 3
    assert server.batch_creates == 4 and len(server.batches) == 2


def test_output_lines_in_another_order_give_the_same_verdicts(server, table, tmp_path):
    server.batch_shuffle = True
    finish(server, table, tmp_path / "batch.jsonl", tmp_path / "cache-batch")
    direct(server, table, tmp_path / "direct.jsonl", tmp_path / "cache-direct")
    assert read(tmp_path / "batch.jsonl")[COLUMNS].to_dict("records") == read(tmp_path / "direct.jsonl")[COLUMNS].to_dict("records")


def test_failed_lines_are_resubmitted_never_dropped(server, table, tmp_path):
    server.batch_line_errors = 2  # two lines of the first batch: a 500 in the error file
    outcome, runs = finish(server, table, tmp_path / "scored.jsonl", tmp_path / "cache")
    assert outcome.exit_code == 0
    scored = read(tmp_path / "scored.jsonl")
    assert list(scored["sufficiency_status"]) == ["ok"] * 4 and list(scored["completeness_status"]) == ["ok"] * 4
    assert sorted(server.batch_submitted.values()) == [1] * 10 + [2] * 2  # the two failed lines sent again, once
    assert server.calls == 0
    manifest = json.loads((tmp_path / "scored.jsonl.batch" / "manifest.json").read_text())
    assert sum(1 for call in manifest["calls"].values() if call["tries"] == 2) == 2


def test_failed_batch_is_resubmitted_whole(server, table, tmp_path):
    server.batch_failures = 1  # the first batch fails validation, with line errors
    outcome, _ = finish(server, table, tmp_path / "scored.jsonl", tmp_path / "cache")
    assert outcome.exit_code == 0
    first = server.batches["batch_fake_1"]["object"]
    assert first["status"] == "failed" and first["errors"]["data"][0]["line"] == 1
    assert sorted(server.batch_submitted.values()) == [1] * 4 + [2] * 8  # round 1 twice, round 2 once
    assert list(read(tmp_path / "scored.jsonl")["completeness_status"]) == ["ok"] * 4


def test_a_line_that_always_expires_is_an_error_row_after_three_tries(server, table, tmp_path):
    server.batch_expire = 1  # each batch's last line expires
    outcome, _ = finish(server, table, tmp_path / "scored.jsonl", tmp_path / "cache", limit=12)
    assert outcome.exit_code == 3  # an error row, gate.max_error_rate 0
    scored = read(tmp_path / "scored.jsonl")
    errors = scored[(scored["sufficiency_status"] == "error") | (scored["completeness_status"] == "error")]
    summary = outcome.result.summary.metrics
    assert summary["sufficiency"].error + summary["completeness"].error >= 1
    messages = [m for column in ("sufficiency_error", "completeness_error") for m in errors[column].dropna()]
    assert messages and all("batch_expired" in m and "3 time(s)" in m and "--batch-fallback direct" in m for m in messages)
    assert max(server.batch_submitted.values()) == 3 and server.calls == 0
    assert summary["sufficiency"].ok + summary["sufficiency"].error == 4  # every row has its status: none dropped


def test_batch_fallback_direct_judges_failed_lines_directly(server, table, tmp_path):
    server.batch_expire = 1
    outcome, _ = finish(server, table, tmp_path / "scored.jsonl", tmp_path / "cache", batch_fallback="direct")
    assert outcome.exit_code == 0
    scored = read(tmp_path / "scored.jsonl")
    assert list(scored["sufficiency_status"]) == ["ok"] * 4 and list(scored["completeness_status"]) == ["ok"] * 4
    assert set(server.batch_submitted.values()) == {1}
    assert server.calls >= 1  # the expired calls (and what follows them), made directly at the full price


@pytest.mark.parametrize("args, message", [
    pytest.param(["--no-cache"], "--batch judges from the response cache, and it is off", id="no_cache"),
    pytest.param(["--model", "mistral/mistral-small-latest"], "is not served by a batch API ragjudge speaks", id="another_provider"),
    pytest.param(["--panel", "openai/a,openai/b"], "a panel (judge.panel) is not batched: leave out one of them", id="panel"),
    pytest.param(["--model", "openai-decisions/gpt-6-luna"], "is a decision model, and its endpoint has no batch API", id="decisions"),
    pytest.param(["--model", "systemone/jev-latest"], "is a decision model, and its endpoint has no batch API", id="systemone"),
])
def test_batch_refuses_what_it_cannot_do(run_cli, table, args, message):
    result = run_cli(["score", table, "--batch", *args])
    assert result.code == 2
    assert message in result.stderr + result.stdout


def test_batch_refuses_stdin(run_cli, table):
    with open(table, "rb") as handle:
        result = run_cli(["score", "-", "--batch"], stdin=handle.read())
    assert result.code == 2 and "give a file, not stdin" in result.stderr + result.stdout


def test_cli_prints_how_to_collect(run_cli, table, tmp_path):
    out = tmp_path / "scored.jsonl"
    result = run_cli(["score", table, "-o", str(out), "--batch", "--min-pass-rate", "0"])
    assert result.code == 4
    assert f"batch: manifest {out}.batch/manifest.json" in result.stderr
    assert "run the same command again to collect" in result.stderr
    done = run_cli(["score", table, "-o", str(out), "--batch", "--batch-wait", "--min-pass-rate", "0", "--set", "judge.batch_poll=0.01"])
    assert done.code == 0, done.stderr
    assert "batch: 8/8 calls done (completed)" in done.stderr  # the provider's counts, a line per poll off a terminal
    assert "batch: submitted 4 call(s) in batch_fake_2 (round 2)" in done.stderr
    assert "batch: 12 call(s) answered in 2 batch(es), priced at the batch price; manifest" in done.stderr


def test_a_run_with_every_call_cached_submits_nothing_and_leaves_no_folder(server, table, tmp_path):
    direct(server, table, tmp_path / "direct.jsonl", tmp_path / "cache")
    out = tmp_path / "scored.jsonl"
    outcome = run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache"))
    assert outcome.exit_code == 0 and server.batch_creates == 0
    assert not (tmp_path / "scored.jsonl.batch").exists()
    assert outcome.result.summary.metrics["completeness"].cached == 4


def test_dry_run_shows_both_prices_and_counts_at_the_batch_price(tmp_path, table):
    from ragjudge.run.estimate import estimate, render

    settings = {"model": MODEL, "api_base": "http://127.0.0.1:9/v1"}
    direct_report = estimate(table, load_config(None, {"judge": settings, "cache": {"dir": str(tmp_path / "c")}}))
    batch_report = estimate(table, load_config(None, {"judge": {**settings, "batch": True}, "cache": {"dir": str(tmp_path / "c")}}))
    both = batch_report["cost_by_api"]
    assert both == direct_report["cost_by_api"]
    assert both["batch"]["low"] == pytest.approx(both["direct"]["low"] / 2) and both["batch"]["high"] == pytest.approx(both["direct"]["high"] / 2)
    assert batch_report["total"]["cost_low"] == pytest.approx(both["batch"]["low"])  # the run's own figures at the batch price
    assert direct_report["total"]["cost_low"] == pytest.approx(both["direct"]["low"])
    line = render(batch_report)[-1]
    assert line.startswith("cost by API: direct $") and "batch API (--batch) $" in line and line.endswith("this run: batch")
    # a new user's trial: the dry run of a batch run said "a Scorer calls the model directly, at the direct price"
    assert not [note for note in batch_report["notes"] if "direct price" in note]


def test_batch_price_is_the_tables_else_half():
    from ragjudge import prices

    assert prices.batch_rates({"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6}) == (1e-6, 4e-6)
    assert prices.batch_rates({"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6, "input_cost_per_token_batches": 5e-7,
                               "output_cost_per_token_batches": 3e-6}) == (5e-7, 3e-6)
    assert prices.cost("openai", ["gpt-4o-mini"], 1000, 100, batch=True) == pytest.approx(1000 * 7.5e-8 + 100 * 3e-7)


def test_evaluate_raises_batch_submitted_until_the_replies_are_in(server, table, tmp_path):
    from ragjudge import evaluate
    from ragjudge.errors import BatchSubmitted

    cfg = config(server, tmp_path / "cache")
    out = str(tmp_path / "scored.jsonl")
    with pytest.raises(BatchSubmitted) as raised:
        evaluate(table, cfg, output=out)
    assert raised.value.exit_code == 4 and raised.value.folder == out + ".batch"
    result = evaluate(table, cfg, output=out, batch_wait=True)
    assert result.summary.metrics["completeness"].ok == 4 and result.gate.exit_code == 0


def test_batch_collect_finishes_the_run_the_manifest_records(run_cli, server, table, tmp_path, monkeypatch):
    out = tmp_path / "scored.jsonl"
    first = run_cli(["score", table, "-o", str(out), "--batch", "--min-pass-rate", "0", "--model", MODEL])
    assert first.code == 4
    manifest = f"{out}.batch/manifest.json"
    monkeypatch.chdir(tmp_path)  # another folder: the recorded paths are absolute
    assert run_cli(["batch", "collect", manifest], judge=False).code == 4  # round 2 submitted
    done = run_cli(["batch", "collect", manifest, "--batch-wait"], judge=False)
    assert done.code == 0, done.stderr
    assert list(read(out)["completeness_status"]) == ["ok"] * 4
    assert set(server.batch_submitted.values()) == {1}


def test_batch_collect_names_the_fix_for_a_missing_manifest(run_cli, tmp_path):
    result = run_cli(["batch", "collect", str(tmp_path / "nothing.json")], judge=False)
    assert result.code == 2 and "give the manifest.json a --batch run printed" in result.stderr


def test_max_cost_stops_the_calls_past_it_and_keeps_what_was_paid(server, table, tmp_path):
    """The budget, $0.00014, is above round 1's prompt tokens ($0.0001353 at the batch price: a batch
    beyond it is refused before it is submitted, test above), so round 1 goes; its replies cost
    $0.000144 (sufficiency) and more, so of round 2's coverage calls only those asked before the
    spend crossed the budget are submitted, the others are error rows "budget reached", and every
    reply already paid is used."""
    outcome, runs = finish(server, table, tmp_path / "scored.jsonl", tmp_path / "cache", max_cost=0.00014)
    assert runs == 3 and outcome.exit_code == 3
    scored = read(tmp_path / "scored.jsonl")
    assert list(scored["sufficiency_status"]) == ["ok"] * 4
    assert list(scored["completeness_status"]) == ["ok", "ok", "error", "error"]
    assert list(scored["completeness_error"])[2:] == ["budget reached"] * 2
    assert len(server.batch_submitted) == 10 and set(server.batch_submitted.values()) == {1} and server.batch_creates == 2
    assert outcome.result.summary.metrics["sufficiency"].usage.cost_usd > 0.00014


# -- Anthropic's Message Batches -----------------------------------------------------------------

CLAUDE = "anthropic/claude-haiku-4-5"  # the table's batch price: half


def claude(server, cache, **judge):
    settings = {"model": CLAUDE, "api_base": server.url[:-3], "batch": True, "batch_poll": 0.01, **judge}
    return load_config(None, {"judge": settings, "cache": {"dir": str(cache)}, "gate": {"min_pass_rate": 0}})


def test_anthropic_message_batches_end_to_end(server, table, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    server.batch_shuffle = True
    out = tmp_path / "scored.jsonl"
    codes = [run(ScoreRequest(table, output=str(out)), claude(server, tmp_path / "cache")).exit_code for _ in range(3)]
    assert codes == [4, 4, 0]
    assert [b for b in server.batches] == ["msgbatch_fake_1", "msgbatch_fake_2"] and set(server.batch_submitted.values()) == {1}
    first = server.batches["msgbatch_fake_1"]["lines"][0]["params"]
    assert first["model"] == "claude-haiku-4-5" and first["max_tokens"] >= 16 and first["messages"][-1]["role"] == "user"
    scored = read(out)
    assert list(scored["sufficiency_status"]) == ["ok"] * 4 and list(scored["completeness_status"]) == ["ok"] * 4
    tokens = scored["sufficiency_prompt_tokens"].sum(), scored["sufficiency_completion_tokens"].sum()
    assert scored["sufficiency_cost_usd"].sum() == pytest.approx(tokens[0] * 5e-7 + tokens[1] * 2.5e-6)  # the batch price
    # the same verdicts as the OpenAI protocol's batch of the same replies (the rule answers both alike)
    finish(server, table, tmp_path / "openai.jsonl", tmp_path / "cache-openai")
    assert scored[COLUMNS].to_dict("records") == read(tmp_path / "openai.jsonl")[COLUMNS].to_dict("records")


def test_anthropic_errored_and_expired_results_are_resubmitted(server, table, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    server.batch_line_errors = 1
    server.batch_429 = 1
    out = tmp_path / "scored.jsonl"
    outcome = run(ScoreRequest(table, output=str(out), batch_wait=True), claude(server, tmp_path / "cache"))
    assert outcome.exit_code == 0
    assert sorted(server.batch_submitted.values()) == [1] * 11 + [2]
    manifest = json.loads((tmp_path / "scored.jsonl.batch" / "manifest.json").read_text())
    assert [c["tries"] for c in manifest["calls"].values() if c["tries"] == 2] == [2]


def test_anthropic_batch_without_a_key_names_it(server, table, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    from ragjudge.errors import ProviderFatalError

    with pytest.raises(ProviderFatalError, match="no API key in ANTHROPIC_API_KEY"):
        run(ScoreRequest(table, output=str(tmp_path / "o.jsonl")), claude(server, tmp_path / "cache"))


def test_samples_are_submitted_once_each(server, table, tmp_path):
    cfg = load_config(None, {"metrics": ["sufficiency"], "judge": {"model": MODEL, "api_base": server.url, "batch": True,
                                                                   "batch_poll": 0.01, "samples": 3},
                             "cache": {"dir": str(tmp_path / "cache")}, "gate": {"min_pass_rate": 0}})
    out = tmp_path / "scored.jsonl"
    outcome = run(ScoreRequest(table, output=str(out), batch_wait=True), cfg)
    assert outcome.exit_code == 0
    assert len(server.batch_submitted) == 12 and set(server.batch_submitted.values()) == {1}  # 4 rows x 3 samples
    assert list(read(out)["sufficiency_agreement"]) == [1.0] * 4


def test_a_second_process_on_the_same_batch_folder_is_refused(server, table, tmp_path):
    import fcntl

    from ragjudge.errors import ConfigError

    folder = tmp_path / "scored.jsonl.batch"
    folder.mkdir()
    with open(folder / ".lock", "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # as another process collecting it holds it
        with pytest.raises(ConfigError, match="another ragjudge process is collecting or submitting the batches of"):
            run(ScoreRequest(table, output=str(tmp_path / "scored.jsonl")), config(server, tmp_path / "cache"))
    assert server.batch_creates == 0


def test_a_replies_file_cut_by_a_killed_process_is_read_past(tmp_path):
    from ragjudge.transports.batch import Manifest

    manifest = Manifest(tmp_path / "b")
    manifest.add_replies([{"custom_id": "a", "body": {"x": 1}, "batch": True}])
    with open(manifest.replies_path, "ab") as handle:
        handle.write(b'{"custom_id": "b", "bo')  # killed mid-line
    again = Manifest(tmp_path / "b")
    assert set(again.replies()) == {"a"}
    again.add_replies([{"custom_id": "c", "body": {"y": 2}, "batch": True}])
    assert Manifest(tmp_path / "b").reply("c")["body"] == {"y": 2} and again.reply("a")["body"] == {"x": 1}


def test_a_line_refused_for_its_response_format_is_asked_again_without_it(server, table, tmp_path):
    server.reject_response_format = True  # each line with response_format: a 400 in the error file
    outcome, _ = finish(server, table, tmp_path / "scored.jsonl", tmp_path / "cache")
    assert outcome.exit_code == 0
    scored = read(tmp_path / "scored.jsonl")
    assert list(scored["sufficiency_status"]) == ["ok"] * 4 and list(scored["completeness_status"]) == ["ok"] * 4
    again = [line["body"] for entry in list(server.batches.values())[1:] for line in entry["lines"]]
    assert again and all("response_format" not in body for body in again)
    assert sorted(server.batch_submitted.values()) == [1] * 4 + [2] * 8 and server.calls == 0  # round 2 went without it at once


def test_a_scorer_with_judge_batch_says_it_calls_directly_and_the_dry_run_does_not(judge, run_score, table):
    # the note was the Scorer's from its construction, and the dry run (which builds a Scorer to
    # count, and prices the batch itself) dropped it by its text; it is said when a Scorer scores
    from helpers import sample_frame
    from ragjudge import Scorer
    from ragjudge.scoring import DIRECT_BATCH

    assert DIRECT_BATCH.endswith("a Scorer calls the model directly, at the direct price")
    with Scorer(metrics=["sufficiency"], judge={"batch": True}, cache={"enabled": False}, transport=judge) as scorer:
        assert DIRECT_BATCH not in scorer.notes
        scored = scorer.score(sample_frame())
    assert DIRECT_BATCH in scored.notes
    dry = run_score(table, metric=["sufficiency"], batch=True, dry_run=True)
    assert dry.code == 0, dry.text
    assert dry.result["batch"] is True and "a Scorer calls the model directly" not in dry.text


def test_batch_wait_without_batch_names_the_fix(run_cli, table):
    result = run_cli(["score", table, "--batch-wait"])
    assert result.code == 2 and "--batch-wait waits for the batches of a batch run: add --batch, or leave it out" in result.stderr


def test_batch_collect_from_another_folder_fills_the_runs_own_cache(run_cli, server, table, tmp_path, monkeypatch):
    # a relative --cache-dir was read from the collecting folder: the paid replies went to a new cache there, and the
    # next run in the starting folder paid for every call again
    start, other = tmp_path / "x", tmp_path / "z"
    start.mkdir()
    other.mkdir()
    monkeypatch.chdir(start)
    args = ["score", table, "-o", "scored.jsonl", "--min-pass-rate", "0", "--model", MODEL, "--api-base", server.url, "--cache-dir", "cc"]
    assert run_cli([*args, "--batch"], judge=False).code == 4
    monkeypatch.chdir(other)
    done = run_cli(["batch", "collect", str(start / "scored.jsonl.batch"), "--batch-wait"], judge=False)
    assert done.code == 0, done.stderr
    assert not (other / "cc").exists() and (start / "cc").is_dir()
    monkeypatch.chdir(start)
    calls = server.calls
    again = run_cli(args, judge=False)
    assert again.code == 0 and server.calls == calls  # every reply from the run's own cache


def test_batch_collect_gates_as_the_run_it_finishes(run_cli, server, tmp_path):
    # the manifest held every default as if set: completeness, which judged no row, failed "the bound set on it measured nothing"
    table = tmp_path / "no_truth.jsonl"
    table.write_text("".join(json.dumps({"id": f"r{i}", "request": f"Where is tower {i}?", "context": [f"Tower {i} is in Paris."]}) + "\n"
                             for i in range(4)))
    out = tmp_path / "scored.parquet"
    args = ["score", str(table), "-o", str(out), "--batch", "--min-pass-rate", "0", "--model", MODEL]
    assert run_cli(args).code == 4
    done = run_cli(["batch", "collect", f"{out}.batch/manifest.json", "--batch-wait"], judge=False)
    assert done.code == 0, done.stdout + done.stderr
    assert run_cli(args).code == 0  # the same command, now from the cache, gates alike


def test_a_manifest_of_another_shape_is_exit_2_naming_it(run_cli, server, table, tmp_path):
    # "batches": "x" ended the run with "unexpected AttributeError: 'str' object has no attribute 'get'"
    out = tmp_path / "scored.jsonl"
    assert run_cli(["score", table, "-o", str(out), "--batch", "--min-pass-rate", "0", "--model", MODEL]).code == 4
    manifest = out.parent / "scored.jsonl.batch" / "manifest.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "batches": "x"}))
    result = run_cli(["batch", "collect", str(manifest)], judge=False)
    assert result.code == 2 and "not a batch manifest as ragjudge writes it" in result.stderr and "Traceback" not in result.stderr


def test_a_batch_over_the_budget_is_refused_before_it_is_submitted(run_cli, server, table, tmp_path):
    # --batch --max-cost 1 spent $4.88 and passed: a batch is paid whole once submitted
    out = tmp_path / "scored.jsonl"
    result = run_cli(["score", table, "-o", str(out), "--batch", "--min-pass-rate", "0", "--model", MODEL, "--max-cost", "0.0000001"])
    assert result.code == 2 and "a batch is paid whole once submitted; nothing was submitted" in result.stderr
    assert not server.batch_submitted and not out.exists()
    assert run_cli(["score", table, "-o", str(out), "--batch", "--min-pass-rate", "0", "--model", MODEL, "--max-cost", "10"]).code == 4


def test_ctrl_c_while_waiting_says_the_batch_runs_on_and_how_to_collect(run_cli, server, table, tmp_path, monkeypatch):
    # it said "interrupted: nothing more was written (a Ctrl-C while judging still writes every row)"
    import ragjudge.run.batch as batch_run

    real = batch_run.collect

    def interrupted(manifest, client, wait, poll, hear=None, *rest):  # Ctrl-C reaches the main thread while it waits on the batch
        if wait and manifest.open_batches():
            raise KeyboardInterrupt
        return real(manifest, client, wait, poll, hear, *rest)

    monkeypatch.setattr(batch_run, "collect", interrupted)
    out = tmp_path / "scored.jsonl"
    result = run_cli(["score", table, "-o", str(out), "--batch", "--batch-wait", "--min-pass-rate", "0", "--model", MODEL])
    assert result.code == 130 and not out.exists()
    assert (f"interrupted: no table was written; the batch(es) submitted keep running at the provider (paid): run the same command "
            f"again, or ragjudge batch collect {out}.batch/manifest.json, to collect them") in result.stderr
    assert "nothing more was written" not in result.stderr
    monkeypatch.setattr(batch_run, "collect", real)
    again = run_cli(["score", table, "-o", str(out), "--batch", "--batch-wait", "--min-pass-rate", "0", "--model", MODEL])
    assert again.code == 0 and set(server.batch_submitted.values()) == {1}


def test_batch_fallback_without_batch_is_named():
    # --batch-fallback direct without --batch was passed over without a word (noted at the issue 50 stop)
    from ragjudge import Config
    from ragjudge.scoring import Scorer

    with Scorer(Config(judge={"model": "openai/fake-judge", "batch_fallback": "direct"}, cache={"enabled": False})) as scorer:
        assert ("note: judge.batch_fallback (direct) decides what a batch does with the calls it could not judge; this run calls the model "
                "directly: give --batch (judge.batch: true) to use it") in scorer.notes
    with Scorer(Config(judge={"model": "openai/fake-judge"}, cache={"enabled": False})) as scorer:
        assert not [note for note in scorer.notes if "batch_fallback" in note]


def test_collecting_from_another_endpoint_is_refused(server, table, tmp_path):
    # a breaker's find: collected with another --api-base, the batches were asked of a server that never had them (404), or
    # worse, one holding other batches by the same ids, whose replies were taken as this run's
    from ragjudge.errors import ConfigError

    out = tmp_path / "scored.jsonl"
    assert run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache")).exit_code == EXIT_SUBMITTED
    settings = {"model": MODEL, "api_base": "http://127.0.0.1:9/v1", "batch": True, "batch_poll": 0.01}
    other = load_config(None, {"judge": settings, "cache": {"dir": str(tmp_path / "cache")}, "gate": {"min_pass_rate": 0}})
    with pytest.raises(ConfigError, match=r"its batches were submitted to api_base http://127\.0\.0\.1:\d+/v1; this run has "
                                          r"http://127\.0\.0\.1:9/v1: give the same --api-base to collect them"):
        run(ScoreRequest(table, output=str(out)), other)
    assert server.batch_creates == 1


def test_a_manifest_of_another_version_is_refused(server, table, tmp_path):
    from ragjudge.errors import ConfigError

    out = tmp_path / "scored.jsonl"
    assert run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache")).exit_code == EXIT_SUBMITTED
    path = tmp_path / "scored.jsonl.batch" / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "version": 999}))
    with pytest.raises(ConfigError, match="a batch manifest of version 999; this ragjudge reads version 1"):
        run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache"))


def test_batch_collect_works_on_the_folder_of_the_manifest_it_is_given(server, table, tmp_path):
    # a breaker's find: collect COPY/manifest.json advanced the run's own folder (the one beside -o), not the copy
    import shutil

    from ragjudge.run import recorded_request

    out = tmp_path / "scored.jsonl"
    assert run(ScoreRequest(table, output=str(out)), config(server, tmp_path / "cache")).exit_code == EXIT_SUBMITTED
    original = tmp_path / "scored.jsonl.batch"
    copy = tmp_path / "copy.batch"
    shutil.copytree(original, copy)
    before = (original / "manifest.json").read_text()
    request, settings = recorded_request(str(copy / "manifest.json"), batch_wait=True)
    assert request.batch_folder == str(copy)
    assert run(request, settings).exit_code == 0
    assert (original / "manifest.json").read_text() == before  # the original untouched
    assert json.loads((copy / "manifest.json").read_text())["batches"][-1]["round"] == 2  # the copy went on to round 2


def test_batch_collect_gates_as_the_direct_run_of_the_same_command(run_cli, server, tmp_path, monkeypatch):
    # the manifest saved --min-pass-rate 0.5 expanded to every metric, which read back as each one
    # named: collect failed "completeness: no row judged" where the same command run directly
    # skipped that bound (completeness had no response to judge)
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "response"}) + "\n" for r in rows(4)), encoding="utf-8")
    out = tmp_path / "scored.jsonl"
    direct = run_cli(["score", str(path), "--min-pass-rate", "0.5", "--model", MODEL, "-q", "--no-cache"])  # the batch run pays its own
    assert "SKIP completeness: no row judged" in direct.stderr
    assert run_cli(["score", str(path), "-o", str(out), "--batch", "--min-pass-rate", "0.5", "--model", MODEL]).code == 4
    manifest = f"{out}.batch/manifest.json"
    assert json.loads(open(manifest).read())["run"]["config"]["gate"] == {"min_pass_rate": {"*": 0.5}}
    done = run_cli(["batch", "collect", manifest, "--batch-wait"], judge=False)
    assert done.code == direct.code, done.stderr
    assert "SKIP completeness: no row judged" in done.stderr and "FAIL completeness" not in done.stderr
