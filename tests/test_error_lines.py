"""What a failing run says about its error rows (issue 44 item 12): the reason once, with the
rows it hit, not five lines of "row N: error"; a refused connection named by the URL given, not
aiohttp's "ssl:default" for an http:// URL."""

from __future__ import annotations


from conftest import SAMPLE
from helpers import free_port as _closed_port


def test_a_refused_connection_is_said_once_with_the_url_given(run_cli, tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = run_cli(["score", str(SAMPLE / "rag_eval.jsonl"), "--api-base", url, "--model", "openai/fake-judge", "--no-cache", "-q"],
                     judge=False)
    assert result.code == 3
    lines = result.stderr.splitlines()
    errors = [line for line in lines if "row(s)" in line and ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith("  32 row(s) (sufficiency 24, completeness 8): error: cannot connect to "
                                                     f"openai/fake-judge at {url}: ")
    assert "ssl:default" not in result.stderr and "Connect call failed" in errors[0]


def test_no_key_is_said_once_with_the_rows_it_hit(run_cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    result = run_cli(["score", str(SAMPLE / "rag_eval.jsonl"), "-m", "sufficiency", "--model", "openai/gpt-4o-mini", "--no-cache", "-q"],
                     judge=False)
    assert result.code == 3
    assert "  24 row(s) (sufficiency): error: no API key for openai/gpt-4o-mini: set the provider's API key variable" in result.stderr
    assert sum(": error: " in line for line in result.stderr.splitlines()) == 1
