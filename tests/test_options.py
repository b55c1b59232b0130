"""The command's options (``ragjudge.options``, ``--set``): checked before any judge call, and
refused with one line that names the option as it was given, never an internal path."""

from __future__ import annotations

from conftest import write_jsonl
import pytest


# peer report (issue 20 item 16): Internal paths leak into messages
def test_an_unknown_metric_is_named_plainly(run_cli, tmp_path):
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "q", "context": ["c"]}]), "-m", "faithfulness"])
    assert result.code == 2
    assert result.stderr.strip() == ("error: -m/--metric: unknown metric 'faithfulness'; use sufficiency, completeness, groundedness or a judge "
                                     "defined in the config")  # named where it was set, as a --set or a file is


# peer report (issue 20 item 16): Internal paths leak into messages
@pytest.mark.parametrize("args, message", [
    (["--concurrency", "0"], "error: --concurrency: should be greater than or equal to 1 (got 0)"),
    (["--samples", "99"], "error: --samples: should be less than or equal to 15 (got 99)"),
    (["--transport", "http"], "error: --transport: should be 'auto' or 'litellm' (got 'http')"),
    (["--cache-dir", " "], "error: --cache-dir: should not be empty or blank (got ' ')"),
])
def test_config_messages_name_the_option_and_no_internal_path(run_cli, tmp_path, args, message):
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "q", "context": ["c"]}]), *args], judge=False)
    assert result.code == 2 and result.stderr.strip() == message
