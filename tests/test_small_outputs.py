"""Small things a new user met in the first hour (issue 44 item 13): a dry run that took 8.9 s
where the run took 3.5 s (it imported litellm to count tokens: 3 s), "1 rows", and a histogram of
fractional completeness scores counting half rows."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLE


@pytest.mark.slow  # a ragjudge process, timed against a run
def test_a_dry_run_of_an_openai_model_counts_tokens_without_importing_litellm(tmp_path):
    code = ("import sys\nfrom ragjudge.cli import main\n"
            f"sys.argv = ['ragjudge', 'score', {str(SAMPLE / 'rag_eval.jsonl')!r}, '--model', 'openai/gpt-4o-mini', '--dry-run', '-q', "
            f"'--cache-dir', {str(tmp_path / 'c')!r}]\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    print('exit', exc.code)\n"
            "print('litellm' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[-2:] == ["exit 0", "False"], done.stdout + done.stderr
    assert "(counted with the model's tokenizer)" in done.stderr


def test_the_token_count_is_litellms_on_the_sample_prompts():
    import pandas as pd

    from ragjudge import load_config
    from ragjudge.prices import TokenCounter, _litellm
    from ragjudge.scoring import Scorer
    from ragjudge.types import Call

    frame = pd.read_json(SAMPLE / "rag_eval.jsonl", lines=True)
    litellm = _litellm()
    counter = TokenCounter("openai/gpt-4o-mini")
    with Scorer(load_config(None, {"judge": {"model": "openai/gpt-4o-mini"}, "cache": {"enabled": False}})) as scorer:
        records = scorer.records(frame, scorer.resolve(frame))
        calls = [call for record in records for judge in scorer.judges if isinstance(call := judge.prepare(record), Call)]
    assert len(calls) > 20
    from litellm.litellm_core_utils.token_counter import TIKTOKEN_ENCODE_CHUNK_SIZE_CHARS as piece

    for call in calls:  # litellm encodes a long text in pieces and adds them up: a token more or less at each piece's edge
        ours, theirs = counter(call.messages), litellm.token_counter(model="gpt-4o-mini", messages=call.messages)
        edges = sum(len(m["content"]) // piece for m in call.messages)
        assert abs(ours - theirs) <= 3 * edges, (ours, theirs, edges)  # tiktoken on the whole text: OpenAI's own count
    reply = '{"verdict": "yes", "rationale": "The passage says the tower is in Paris — façade included."}'
    assert counter.text(reply) == litellm.token_counter(model="gpt-4o-mini", text=reply)


def test_one_row_is_one_row_and_a_histogram_counts_whole_rows(monkeypatch):
    import pandas as pd

    from ragjudge import load_config
    from ragjudge.reports import html

    figures = []
    monkeypatch.setattr(html, "_svg", lambda figure: figures.append(figure) or "<svg></svg>")
    row = {"id": "a", "request": "q", "response": "r", "expected_response": "e", "completeness_status": "ok", "completeness_score": 2.9,
           "completeness_passed": False, "completeness_rationale": "x", "judge_model": "m"}
    text = html.from_table(pd.DataFrame([row, {**row, "id": "b", "completeness_score": 3.4, "completeness_passed": True}]).iloc[:2],
                           load_config(None, {"metrics": ["completeness"]}))
    assert "· 2 rows ·" in text
    text = html.from_table(pd.DataFrame([row]), load_config(None, {"metrics": ["completeness"]}))
    assert "· 1 row ·" in text and "1 rows" not in text
    histogram = next(f for f in figures if f.axes[0].get_xlabel() == "score")
    assert all(float(tick).is_integer() for tick in histogram.axes[0].get_yticks())
