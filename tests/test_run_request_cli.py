"""The command-line contract of issue 43's run request: ``--print-config`` shows the config a run
uses and where each value came from; the gate's lines are printed as written (brackets
included); a dry run names the outputs it does not write."""

from __future__ import annotations

import json

from conftest import write_jsonl
from helpers import TOWER_ROW as GOOD


def test_print_config_shows_each_value_and_what_set_it_and_reads_no_input(run_cli, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("gate:\n  min_pass_rate: {completeness: 0.5}\njudge:\n  concurrency: 2\n")
    result = run_cli(["score", str(tmp_path / "no-such-file.jsonl"), "-c", str(config), "--min-pass-rate", "completeness=0.8",
                      "--set", "judge.timeout=30", "--print-config"], judge=False)
    assert result.code == 0, result.stderr
    lines = {line.split("#")[0].strip(): line.split("#", 1)[1].strip() for line in result.stdout.splitlines()
             if "#" in line and not line.startswith("#")}
    assert lines["completeness: 0.8"] == "--min-pass-rate"
    assert lines["concurrency: 2"] == f"-c {config}"
    assert lines["timeout: 30.0"] == "--set judge.timeout"
    assert lines["model: openai/gpt-4o-mini"] == "default"
    import yaml

    from ragjudge import load_config

    saved = tmp_path / "effective.yaml"
    saved.write_text(result.stdout)  # the printed config is a config: -c reads it back
    again = load_config(saved)
    assert again.gate.min_pass_rate["completeness"] == 0.8 and again.judge.concurrency == 2 and yaml.safe_load(result.stdout)


def test_print_config_with_the_all_metrics_key_is_read_back_by_c(run_cli, tmp_path):
    # `*: 0.05` was printed bare: -c said "line 51 is not valid YAML ... found ':'"
    source = str(tmp_path / "no-such-file.jsonl")
    printed = run_cli(["score", source, "--max-error-rate", "completeness=0.1", "--max-error-rate", "0.05", "--print-config"], judge=False)
    assert printed.code == 0, printed.stderr
    assert "    '*': 0.05" in printed.stdout
    saved = tmp_path / "p.yaml"
    saved.write_text(printed.stdout)
    again = run_cli(["score", source, "-c", str(saved), "--print-config"], judge=False)
    assert again.code == 0, again.stderr

    def values(text: str) -> list[str]:
        return [line.split("#")[0].rstrip() for line in text.splitlines() if not line.startswith("#")]

    assert values(again.stdout) == values(printed.stdout)


def test_a_gate_line_with_brackets_is_printed_as_written(run_cli, tmp_path):
    # rich read "[sufficiency]" in a gate line as markup and printed "gate.allow_unjudged: "
    source = write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a", "context": None}])
    result = run_cli(["score", source, "--min-pass-rate", "sufficiency=0.9", "-q"])
    assert result.code == 1
    assert "or allow it: gate.allow_unjudged: [sufficiency]\n" in result.stderr


def test_a_dry_run_names_the_outputs_it_checks_and_does_not_write(run_cli, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}])
    out, junit, summary = tmp_path / "o.jsonl", tmp_path / "j.xml", tmp_path / "s.json"
    result = run_cli(["score", source, "--dry-run", "-o", str(out), "--junit", str(junit), "--summary-json", str(summary)])
    assert result.code == 0 and not out.exists() and not junit.exists()
    assert "note: a dry run writes and logs nothing but --summary-json: -o, --junit checked, not used" in result.stderr
    assert json.loads(summary.read_text())["dry_run"]["rows"] == 1


def test_compare_refuses_a_map_of_another_field_and_an_id_column_it_lacks(run_cli, tmp_path):
    # compare --map request=X was accepted and did nothing; --map id=nope matched by position in silence
    import pandas as pd

    table = tmp_path / "t.parquet"
    pd.DataFrame({"id": ["a", "b"], "sufficiency_status": ["ok", "ok"], "sufficiency_passed": [True, False],
                  "sufficiency_score": [1.0, 0.0]}).to_parquet(table)
    other = run_cli(["compare", str(table), str(table), "--map", "request=question"], judge=False)
    assert other.code == 2 and "compare matches rows by id only: --map request=... has no use here" in other.stderr
    missing = run_cli(["compare", str(table), str(table), "--map", "id=nope"], judge=False)
    assert missing.code == 2 and "the baseline table has no column 'nope' to read the ids from (id=nope)" in missing.stderr
    fine = run_cli(["compare", str(table), str(table), "--max-regressions", "0"], judge=False)
    assert fine.code == 0, fine.stderr
