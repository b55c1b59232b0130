"""Figure 4c: the floor of a warm-cache row in this design, with no ragjudge logic around it.

A warm row must at least be read, have its cache key computed (the SHA-256 of its request
body as ``json`` would write it: ``ragjudge.cache.cache_key``), be looked up in the response
cache (``ResponseCache.get_many``, one SQL query per 500 keys, the reply unpickled by
diskcache) and be written. This times those four steps alone on N distinct rows (figure 4's
row shape, every request different), with the messages and replies built beforehand and not
timed, and prints each step's microseconds per row and the rows/s the four together allow.
Whatever the rest of ragjudge costs comes on top: a target above this floor needs a
different design of the steps themselves (issue 31's 25,000 rows/s: 40 us a row).

    python bench/warm_floor.py [--rows 100000]
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import time

from _common import WORK, machine, synthetic_rows

READ = "read (pandas JSONL, chunks of 10,000)"
KEY = "key (request body as json writes it, SHA-256)"
READ_ARROW = "read with pandas' pyarrow engine instead (lists come back as numpy arrays)"
KEY_LEAST = "key's least (the messages' text escaped by json's C code, SHA-256 of the body)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    n = args.rows

    import pandas as pd

    from ragjudge import Scorer
    from ragjudge.cache import ResponseCache, cache_key, key_bytes

    work = WORK / "warm_floor"
    shutil.rmtree(work, ignore_errors=True)
    source = synthetic_rows(work / "rows.jsonl", n, context_bytes=1000)  # every row's judge input distinct
    print(f"machine: {machine()}")

    # untimed: the rows' real first calls, made by the judge, and a cache holding a reply for each
    frame = pd.read_json(source, lines=True)
    with Scorer(metrics=["sufficiency"], model="openai/fake-judge", api_base="http://127.0.0.1:9/v1", cache={"dir": str(work / "cache")}) as scorer:
        mapping = scorer.resolve(frame)
        records = scorer.records(frame, mapping)
        judge = scorer.judges[0]
        calls = [judge.prepare(record) for record in records]
        model = scorer.model
        parts = [dict(model=model.provider_model, api_base=model.api_base, temperature=c.temperature, max_tokens=model.settings.max_tokens,
                      seed=model.settings.seed, response_format=c.response_format, messages=c.messages, metric=c.metric,
                      prompt_version=c.version, sample=0, logprobs=c.logprobs) for c in calls]
        keys = [cache_key(**p) for p in parts]
        assert keys == [model.key(c) for c in calls], "these parts no longer make Model.key's key: update them"
    reply = {"verdict": {"metric": "sufficiency", "status": "ok", "score": 1.0, "passed": None, "rationale": "Checked each fact's words against the passages.",
                         "error": None, "missing": [], "mode": "grounded", "details": {"supported": [True], "passages": [[1]], "facts": ["city 0"], "entry_facts": [0]},
                         "input_error": False},
             "raw": '{"facts": [{"fact": 1, "supported": true, "passages": [1]}], "rationale": "Checked each fact\'s words against the passages.", "verdict": "yes"}'}
    timings: dict[str, float] = {}
    others: dict[str, float] = {}  # not part of a warm row's floor, printed beside it

    cache = ResponseCache(work / "cache")
    start = time.perf_counter()
    for key in keys:  # as a cold run stores its replies: WRITE_BATCH per SQLite transaction
        cache.set(key, reply)
    cache.flush()
    others["store (a cold row's reply: ResponseCache.set, 64 per transaction)"] = time.perf_counter() - start
    cache.close()

    start = time.perf_counter()
    read = sum(len(chunk) for chunk in pd.read_json(source, lines=True, chunksize=10_000))
    timings[READ] = time.perf_counter() - start
    assert read == n

    start = time.perf_counter()
    whole = pd.read_json(source, lines=True, engine="pyarrow")  # the whole file at once (this engine reads no chunks)
    others[READ_ARROW] = time.perf_counter() - start
    assert len(whole) == n
    del whole

    start = time.perf_counter()
    again = [cache_key(**p) for p in parts]
    timings[KEY] = time.perf_counter() - start
    assert again == keys

    # the least any digest of the whole body costs: the messages' text escaped as json escapes it
    # (its own C function), nothing else written, and SHA-256 over a body of the same size
    from json.encoder import encode_basestring_ascii

    bodies = [key_bytes(p) for p in parts]
    start = time.perf_counter()
    for p, body in zip(parts, bodies):
        for message in p["messages"]:
            encode_basestring_ascii(message["content"])
        hashlib.sha256(body).digest()
    others[KEY_LEAST] = time.perf_counter() - start

    cache = ResponseCache(work / "cache")
    start = time.perf_counter()
    hits = 0
    for block in range(0, n, 64):
        hits += sum(v is not None for v in cache.get_many(keys[block:block + 64]).values())
    timings["look-up (get_many per 64 keys, replies unpickled)"] = time.perf_counter() - start
    cache.close()
    assert hits == n, hits

    out = frame.assign(sufficiency_score=1.0, sufficiency_passed=True, sufficiency_rationale=reply["verdict"]["rationale"], sufficiency_status="ok",
                       sufficiency_error=None, sufficiency_raw=None, sufficiency_cached=True, judge_model="openai/fake-judge")
    start = time.perf_counter()
    out.to_parquet(work / "out.parquet", index=False)
    timings["write (Parquet of the scored columns)"] = time.perf_counter() - start

    total = sum(timings.values())
    print(f"[4c] the floor of a warm row, {n:,} distinct rows (figure 4's shape), each step alone:")
    for name, seconds in timings.items():
        print(f"  {name}: {1e6 * seconds / n:.1f} us/row")
    print(f"  together: {1e6 * total / n:.1f} us/row = {n / total:,.0f} rows/s at most (issue 31's target: 25,000 rows/s, 40 us/row); "
          f"a million rows: {total * 1_000_000 / n:.1f} s before any of ragjudge's own work")
    for name, seconds in others.items():
        print(f"  beside it, {name}: {1e6 * seconds / n:.1f} us/row")
    least = (total - timings[READ] - timings[KEY]
             + others[READ_ARROW]
             + others[KEY_LEAST])
    print(f"  together with the pyarrow engine's read and the key's least instead: {1e6 * least / n:.1f} us/row = "
          f"{n / least:,.0f} rows/s at most, {1e6 * (n / 25_000 - least) / n:.1f} us/row left for the rest of a row at 25,000 rows/s")


if __name__ == "__main__":
    main()
