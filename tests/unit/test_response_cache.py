"""The response cache is a side store (``ragjudge.cache``): a write that fails (a full disk, an
I/O error) never turns a verdict the judge gave into an error, nor changes the run's exit code;
the run says once how many replies it could not keep."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conftest import write_jsonl
from helpers import landmark_rows


def _filling_cache(folder: Path, free_pages: int) -> Path:
    """A response cache folder whose SQLite database may grow by ``free_pages`` pages only, then
    fails every write with SQLite's own "database or disk is full" (SQLITE_FULL, as on a full file
    system): diskcache keeps its ``sqlite_max_page_count`` setting in the database and sets it on
    every connection it opens, the run's included. No root, no mount: a real SQLite write fails."""
    import diskcache

    responses = folder / "responses"
    with diskcache.Cache(str(responses)) as made:
        pages = made._sql("PRAGMA page_count").fetchall()[0][0]
    diskcache.Cache(str(responses), sqlite_max_page_count=pages + free_pages).close()  # kept in its Settings table
    return responses


def _entries(responses: Path) -> int:
    with sqlite3.connect(responses / "cache.db") as db:
        return db.execute("SELECT COUNT(*) FROM Cache").fetchone()[0]


# peer report (issue 60 item 5, grantjenks/python-diskcache#112): on a full disk 197 of 200 rows were ok, 8 replies
# cached, exit 3 "unexpected OperationalError: database or disk is full"
def test_a_full_cache_keeps_every_verdict_the_judge_gave_and_the_gates_exit_code(run_score, judge, tmp_path):
    responses = _filling_cache(tmp_path / "cache", free_pages=6)
    run = run_score(write_jsonl(tmp_path / "in.jsonl", landmark_rows(200)), metric=["sufficiency"], cache_dir=str(tmp_path / "cache"),
                    min_pass_rate=["0"])
    assert judge.calls == 200
    metric = run.result.summary.metrics["sufficiency"]
    assert (metric.ok, metric.error) == (200, 0)
    assert run.code == 0  # the gate's: every row judged, no bound failed
    kept = _entries(responses)
    assert 0 < kept < 200  # the disk filled part-way through the run
    warnings = [note for note in run.notes if "could not keep" in note]
    assert warnings == [f"warning: the response cache in {tmp_path / 'cache'} could not keep {200 - kept} of 200 replies "
                        "(OperationalError: database or disk is full); their verdicts are in this run's outputs, but a re-run pays "
                        "for those calls again: free space there, choose another folder with --cache-dir, or run with --no-cache"]


# issue 60 item 5: a batch that cannot be stored whole is stored as far as it fits, and writing resumes once there is room
def test_a_full_cache_keeps_what_fits_counts_the_rest_and_writes_again_once_there_is_room(tmp_path):
    import diskcache

    from ragjudge.cache import ResponseCache

    responses = _filling_cache(tmp_path, free_pages=3)
    cache = ResponseCache(tmp_path)
    for i in range(300):
        cache.set(f"key {i}", {"verdict": {"rationale": "r" * 300}, "raw": "x" * 200})
    cache.flush()  # never raises
    assert 0 < cache.written < 300 and cache.written + cache.not_kept == 300
    assert cache.write_error == "OperationalError: database or disk is full"
    kept = cache.written
    cache._cache._sql("PRAGMA max_page_count = 1000000")  # room again (this connection's limit raised)
    for i in range(300, 310):
        cache.set(f"key {i}", {"verdict": {"rationale": "r"}, "raw": "x"})
    cache.close()
    assert (cache.written, cache.not_kept) == (kept + 10, 300 - kept)
    with diskcache.Cache(str(responses)) as stored:
        assert len(stored) == kept + 10 and "key 309" in stored
