"""``ragjudge score --cascade FIRST,THEN --cascade-band LO,HI --to-label FILE`` over the local fake
OpenAI-compatible server (issue 62): the first stage asked with log-probabilities, the rows in
the band sent on to the second model, the rows still unsure written to label."""

from __future__ import annotations

import json

from conftest import read_jsonl, write_jsonl


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
