"""``ragjudge score --cascade FIRST,THEN --cascade-band LO,HI --to-label FILE`` over the local fake
OpenAI-compatible server (issue 62): the first stage asked with log-probabilities, the rows in
the band sent on to the second model, the rows still unsure written to label."""

from __future__ import annotations

import json
import re

import pytest
from conftest import read_jsonl, write_jsonl
from helpers import CHEAP, cascade



def _rows(tmp_path, count: int) -> str:
    return write_jsonl(tmp_path / "in.jsonl", [{"id": f"r{i}", "request": f"question {i}: what is the capital of place {i}?",
                                                  "context": [f"Place {i} has the capital city Town{i}."]} for i in range(count)])


def _models(server) -> list[str]:
    return [request["model"] for request in server.requests]


def test_the_band_decides_which_rows_the_second_model_sees(run_cli, server, tmp_path):
    source, out, summary = _rows(tmp_path, 12), tmp_path / "out.jsonl", tmp_path / "summary.json"
    server.p_yes, server.keep_requests = 0.8, True
    result = run_cli(["score", source, "-m", "sufficiency", "--cascade", "openai/fake-cheap,openai/fake-strong",
                      "--cascade-band", "0.1,0.5", "-o", str(out), "--summary-json", str(summary), "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    assert _models(server) == ["fake-cheap"] * 12  # P(yes) 0.8: out of the band, the first stage decides every row
    assert {row["sufficiency_stage"] for row in read_jsonl(out)} == {"fake_cheap"}
    assert all(request["logprobs"] for request in server.requests)
    counts = json.loads(summary.read_text())["metrics"]["sufficiency"]["cascade"]
    assert (counts["escalated"], counts["stages"]["fake_cheap"]["calls"]) == (0, 12)

    to_label = tmp_path / "label.jsonl"
    server.requests.clear()
    result = run_cli(["score", source, "-m", "sufficiency", "--cascade", "openai/fake-cheap,openai/fake-strong",
                      "--cascade-band", "0.1,0.9", "-o", str(out), "--summary-json", str(summary), "--min-pass-rate", "0",
                      "--set", "sufficiency.yes_threshold=0.5", "--to-label", str(to_label)])
    assert result.code == 0, result.stderr
    assert sorted(_models(server)) == ["fake-strong"] * 12  # a wider band: the first stage's replies cached, every row sent on
    written = read_jsonl(out)
    assert {row["sufficiency_stage"] for row in written} == {"fake_strong"}
    assert all(row["sufficiency_rationale"].startswith("[fake_strong, after fake_cheap P(yes) 0.80 in the band [0.1, 0.9]]") for row in written)
    assert [row["id"] for row in read_jsonl(to_label)] == [f"r{i}" for i in range(12)]  # the strong stage's P(yes) 0.8 is in the band too
    said = result.stdout + result.stderr
    assert "still uncertain after the cascade's last stage" in said
    assert "sufficiency: cascade fake_strong judged 12, decided 12 (12 calls" in said
    assert "sufficiency: cascade escalated 12 of 12 rows (1.00)" in said
    counts = json.loads(summary.read_text())["metrics"]["sufficiency"]["cascade"]
    assert (counts["escalated"], counts["stages"]["fake_strong"]["calls"], counts["stages"]["fake_cheap"]["calls"]) == (12, 12, 0)


def test_a_decision_model_first_stage_sends_exactly_the_rows_in_the_band_to_a_chat_second_stage(run_cli, server, tmp_path):
    """Issue 62's Done-when against the fakes: 400 rows, a decision model (OpenAI Decisions) as the
    first stage, each row with its own P(yes) ((i % 20) / 20 + 0.025), a chat model second; exactly
    the rows whose P(yes) lies in the band reach the chat server, ``sufficiency_stage`` says so per
    row, the summary's escalated fraction and per-stage calls and costs match what the servers saw,
    and a wider band pays only for the newly escalated rows."""

    source, out, summary = _rows(tmp_path, 400), tmp_path / "out.jsonl", tmp_path / "summary.json"
    p_of = {i: (i % 20) / 20 + 0.025 for i in range(400)}
    server.decision_p_yes = lambda text: p_of[int(re.search(r"question (\d+):", text).group(1))]
    server.keep_requests = True
    stages = "openai-decisions/gpt-6-luna,openai/fake-strong"
    priced = "judge.price={input_per_mtok: 1.0, output_per_mtok: 2.0}"

    def run(band: str) -> list[dict]:
        server.requests.clear()
        result = run_cli(["score", source, "-m", "sufficiency", "--cascade", stages, "--cascade-band", band, "-o", str(out),
                          "--summary-json", str(summary), "--min-pass-rate", "0", "--set", priced])
        assert result.code == 0, result.stderr
        return read_jsonl(out)

    rows = run("0.3,0.7")
    decided = [request for request in server.requests if "questions" in request]
    chatted = [request for request in server.requests if "messages" in request]
    in_band = {i for i, p in p_of.items() if 0.3 <= p <= 0.7}
    assert len(decided) == 400 and len(in_band) == 160
    assert sorted(int(re.search(r"question (\d+):", json.dumps(r["messages"])).group(1)) for r in chatted) == sorted(in_band)
    counts = json.loads(summary.read_text())["metrics"]["sufficiency"]["cascade"]
    first = next(name for name in counts["stages"] if name != "fake_strong")
    assert [row["sufficiency_stage"] for row in rows] == ["fake_strong" if i in in_band else first for i in range(400)]
    assert [row[f"sufficiency_cascade_{first}_probability"] for row in rows] == pytest.approx([p_of[i] for i in range(400)])
    assert [row["sufficiency_probability"] for i, row in enumerate(rows) if i not in in_band] == \
        pytest.approx([p_of[i] for i in range(400) if i not in in_band])  # the first stage decided: its P(yes) is the row's
    assert counts["escalated"] == 160 and counts["stages"][first]["calls"] == 400 and counts["stages"]["fake_strong"]["calls"] == 160
    assert counts["stages"]["fake_strong"]["cost_usd"] == pytest.approx(sum(r["sufficiency_cascade_fake_strong_cost_usd"] or 0 for r in rows))

    rows = run("0.2,0.8")  # wider: 80 more rows escalated, the first stage's replies and the 160 rows' chat replies cached
    chatted = [request for request in server.requests if "messages" in request]
    wider = {i for i, p in p_of.items() if 0.2 <= p <= 0.8}
    assert not [request for request in server.requests if "questions" in request]
    assert sorted(int(re.search(r"question (\d+):", json.dumps(r["messages"])).group(1)) for r in chatted) == sorted(wider - in_band)
    assert {row["sufficiency_stage"] for i, row in enumerate(rows) if i in wider} == {"fake_strong"}


def test_calibrate_cascade_writes_the_fitted_band(run_cli, tmp_path):
    import pandas as pd
    import yaml

    from ragjudge import cascade_fit, load_config

    scored, _ = cascade(tmp_path, (0.0, 1.0), stages=(CHEAP, "openai/fake-lenient"), count=120)
    frame = scored.frame
    first = frame["sufficiency_cascade_fake_cheap_passed"].astype(bool)
    unsure = frame["sufficiency_cascade_fake_cheap_probability"].between(0.4, 0.6)
    frame["human"] = [("no" if f else "yes") if u else ("yes" if f else "no") for f, u in zip(first, unsure)]
    table, out = tmp_path / "scored.parquet", tmp_path / "cascade.yaml"
    frame.to_parquet(table)
    stages = f"judge.cascade={CHEAP},openai/fake-lenient"
    result = run_cli(["calibrate", str(table), "--labels", "sufficiency=human", "--set", stages, "--cascade", "--max-escalate", "0.3",
                      "-o", str(out)], judge=False)
    assert result.code == 0, result.stderr
    expected = cascade_fit.band_of(pd.read_parquet(table), load_config(None, {"judge": {"cascade": [CHEAP, "openai/fake-lenient"]},
                                                                             "metrics": ["sufficiency"]}),
                                   "sufficiency", "human", max_escalate=0.3)
    assert yaml.safe_load(out.read_text())["judge"]["cascade_band"] == list(expected.band)
    assert load_config(str(out)).judge.cascade_band == expected.band and expected.escalated <= 0.3
    assert f"out of fold: agreement {expected.oof_agreement:.2f}" in result.stdout
    refused = run_cli(["calibrate", str(table), "--labels", "sufficiency=human", "--cascade", "-o", str(out)], judge=False)
    assert refused.code == 2 and "--set judge.cascade=FIRST,THEN" in refused.stderr


def test_calibrate_cascade_on_labels_of_one_class_writes_nothing_and_says_why(run_cli, tmp_path):
    # a bad-input trial's find: every label "yes" wrote a band with "out of fold agreement 0.72", exit 0
    scored, _ = cascade(tmp_path, (0.0, 1.0), stages=(CHEAP, "openai/fake-lenient"), count=40)
    frame = scored.frame
    frame["human"] = "yes"
    table, out = tmp_path / "scored.parquet", tmp_path / "cascade.yaml"
    frame.to_parquet(table)
    result = run_cli(["calibrate", str(table), "--labels", "sufficiency=human", "--set", f"judge.cascade={CHEAP},openai/fake-lenient",
                      "--cascade", "--max-escalate", "0.3", "-o", str(out)], judge=False)
    assert result.code == 1 and not out.exists()
    assert result.stdout.splitlines() == [
        "sufficiency: 40 labelled rows",
        "  not fitted: every one of the 40 labels is yes: a setting that decides every row so agrees with all of them, and no "
        "agreement tells settings apart; label rows that are no too (at least 5, one a fold)",
        "nothing written: the labels could not be fitted (see above)"]
