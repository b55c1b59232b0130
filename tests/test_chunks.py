"""Streaming in chunks gives the same output as one chunk (issue 6, figure 4)."""

from __future__ import annotations

import pytest

from conftest import SAMPLE
from ragjudge import load_config
from ragjudge.run import evaluate


@pytest.mark.parametrize("suffix", ["jsonl", "csv", "parquet", "json"])
def test_chunked_output_identical_to_single_chunk(server, tmp_path, suffix):
    outputs = {}
    for chunk_size in (5, 100_000):
        config = load_config(None, {
            "judge": {"model": "openai/fake-judge", "api_base": server.url},
            "cache": {"enabled": False},
            "chunk_size": chunk_size,
        })
        out = tmp_path / f"out_{chunk_size}.{suffix}"
        result = evaluate(str(SAMPLE / "rag_eval.jsonl"), config, output=str(out))
        assert result.summary.rows == 32
        outputs[chunk_size] = out
    small, whole = outputs[5], outputs[100_000]
    if suffix == "parquet":
        import pyarrow.parquet as pq

        a, b = pq.read_table(small), pq.read_table(whole)
        assert a.schema == b.schema
        assert a.equals(b)
    else:
        assert small.read_bytes() == whole.read_bytes()
