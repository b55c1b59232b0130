"""The probability columns every metric has (issue 61 item 4): ``M_probability`` for every metric,
``M_distribution`` and ``M_confidence`` for a scored one; typed in the output schema, written to
Parquet as a list of doubles, and kept by the response cache with the verdict."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from ragjudge import Scorer
from ragjudge.types import OK, Verdict


def test_every_metric_has_a_probability_column_and_a_scored_one_its_distribution(judge):
    with Scorer(metrics=["sufficiency", "completeness"], model="openai/fake", transport=judge) as scorer:
        schema = scorer.output_schema()
    assert schema.field("sufficiency_probability").type == pa.float64()
    assert schema.field("completeness_probability").type == pa.float64()
    assert schema.field("completeness_distribution").type == pa.list_(pa.float64())
    assert schema.field("completeness_confidence").type == pa.float64()
    assert "sufficiency_distribution" not in schema.names and "sufficiency_confidence" not in schema.names


def test_a_verdict_without_probabilities_leaves_the_columns_null(run_score, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"request": "q", "context": "Paris is in France.", "expected_facts": ["Paris is in France"], '
                    '"response": "Paris is in France.", "expected_response": "Paris is in France."}\n')
    out = tmp_path / "out.parquet"
    outcome = run_score(str(rows), metric=["sufficiency", "completeness"], output=str(out), min_pass_rate=["0"])
    assert outcome.code == 0, outcome
    table = pq.read_table(out)
    assert table.schema.field("completeness_distribution").type == pa.list_(pa.float64())
    assert table.column("sufficiency_probability").to_pylist() == [None]
    assert table.column("completeness_distribution").to_pylist() == [None]
    assert table.column("sufficiency_status").to_pylist() == [OK]


def test_the_cache_keeps_a_verdicts_probabilities():
    verdict = Verdict("completeness", OK, score=4.0, probability=0.8, distribution=(0.05, 0.05, 0.1, 0.5, 0.3), confidence=0.42)
    back = Verdict.from_cache(verdict.to_cache())
    assert (back.probability, back.distribution, back.confidence) == (0.8, (0.05, 0.05, 0.1, 0.5, 0.3), 0.42)
