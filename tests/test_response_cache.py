"""The response cache on a file system that refuses its writes, as ``ragjudge score`` meets it:
the verdicts stand, the exit code is the gate's, one warning counts the replies not kept (even
with ``-q``). The in-process cases are in ``tests/unit/test_response_cache.py``."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT, write_jsonl
from helpers import landmark_rows

from ragjudge import local

COUNT = "import sqlite3, sys; print('entries', sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM Cache').fetchone()[0])"


def _score(tmp_path, server, prefix: list[str], limit: int | None = None) -> tuple[int, str, int]:
    """``ragjudge score -q`` on 200 rows with its cache in ``tmp_path/cache``, run after
    ``prefix`` (a shell that first mounts the cache folder, say), under a file size limit of
    ``limit`` bytes (RLIMIT_FSIZE: the OS refuses a write past it): the exit code, stderr and the
    entries the cache holds afterwards (counted by the same shell)."""
    source = write_jsonl(tmp_path / "in.jsonl", landmark_rows(200))
    cache = tmp_path / "cache"
    cache.mkdir()
    command = [sys.executable, "-m", "ragjudge", "score", source, "-m", "sufficiency", "--model", "openai/fake", "--api-base", server.url,
               "--cache-dir", str(cache), "--min-pass-rate", "0", "-q"]
    script = (f'{" ".join(map(repr, command))}; code=$?; {sys.executable!r} -c "{COUNT}" {str(cache / "responses" / "cache.db")!r} >&2; '
              'exit $code')

    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run([*prefix, "sh", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300, preexec_fn=limited,
                          env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000", "PYTHONPATH": str(ROOT)})
    entries = [int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("entries ")]
    assert entries, done.stderr
    return done.returncode, done.stderr, entries[0]


def _check(code: int, stderr: str, entries: int, server, error: str) -> None:
    assert server.calls == 200
    assert code == 0, stderr  # the gate's: 200 rows ok, no bound failed
    lost = 200 - entries
    assert 0 < lost < 200, stderr  # the file system filled part-way through
    warnings = [line for line in stderr.splitlines() if line.startswith("warning: the response cache")]
    assert len(warnings) == 1 and f"could not keep {lost} of 200 replies ({error}" in warnings[0], stderr
    assert "unexpected" not in stderr and "Traceback" not in stderr


# peer report (issue 60 item 5, grantjenks/python-diskcache#112), a second shape: the OS refuses the write itself (a
# file past the process's size limit: SQLite's "disk I/O error"), found by the run's last writes, at the cache's close
@pytest.mark.slow  # starts a ragjudge process
def test_a_cache_write_the_file_system_refuses_is_one_warning_not_an_error(tmp_path, server):
    code, stderr, entries = _score(tmp_path, server, [], limit=300_000)
    _check(code, stderr, entries, server, "OperationalError: disk I/O error")


# peer report (issue 60 item 5, grantjenks/python-diskcache#112): the cache folder on a full file system
@pytest.mark.slow  # starts a ragjudge process
def test_a_cache_on_a_full_file_system_keeps_the_verdicts_and_the_gates_exit_code(tmp_path, server):
    # a real full file system: a 320 KiB tmpfs, mounted in a user namespace of its own (no root needed where the
    # kernel lets users make one; as root, the mount namespace alone)
    unshare = shutil.which("unshare")
    prefix = [unshare, "-m"] if os.geteuid() == 0 else [unshare, "-r", "-m"]
    (tmp_path / "cache").mkdir()
    probe = subprocess.run([*prefix, "sh", "-c", f"mount -t tmpfs -o size=4k tmpfs {str(tmp_path / 'cache')!r}"], capture_output=True,
                           text=True) if unshare else None
    if probe is None or probe.returncode != 0:
        pytest.skip("mounting a small tmpfs needs unshare(1) with root or unprivileged user namespaces: "
                    f"{'no unshare' if probe is None else probe.stderr.strip()}")
    (tmp_path / "cache").rmdir()
    mount = f"mount -t tmpfs -o size=320k tmpfs {str(tmp_path / 'cache')!r} && exec \"$0\" \"$@\""
    code, stderr, entries = _score(tmp_path, server, [*prefix, "sh", "-c", mount])
    _check(code, stderr, entries, server, "OperationalError: database or disk is full")


@pytest.mark.integration  # another process holds the cache
def test_reading_many_keys_does_not_wait_for_another_process_writing_the_cache(tmp_path):
    """Review fault: the batched read took SQLite's write lock (diskcache's ``transact``), so a
    warm run waited for, or after 60 s failed behind, another process writing the same cache
    folder. Now the read is a plain read: it is answered while the other process holds the lock."""
    import subprocess
    import sys

    from ragjudge.cache import ResponseCache

    cache = ResponseCache(tmp_path)
    for i in range(100):
        cache.set(f"k{i}", {"verdict": {"metric": "m", "status": "ok", "score": 1.0}, "raw": None})
    cache.flush()
    import diskcache

    cache._cache.close()  # the same folder, with SQLite's wait for a lock at 0.5 s: a read that waited fails fast
    cache._cache = diskcache.Cache(str(tmp_path / "responses"), timeout=0.5)
    release = tmp_path / "release"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time, pathlib\n"
         "con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=1)\n"
         "con.execute('BEGIN IMMEDIATE'); print('locked', flush=True)\n"
         "end = time.time() + 120\n"
         "while not pathlib.Path(sys.argv[2]).exists() and time.time() < end: time.sleep(0.01)\n"
         "con.execute('COMMIT')\n", str(tmp_path / "responses" / "cache.db"), str(release)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        many = cache.get_many([f"k{i}" for i in range(100)] + ["never"])
        assert len(many) == 101 and many["k5"]["verdict"]["score"] == 1.0 and many["never"] is None
    finally:
        release.touch()
        holder.wait(30)
    cache.close()


HOLD = textwrap.dedent("""
    import sys, time
    from ragjudge import local
    with local.machine_turn():
        print("held", flush=True)
        time.sleep(float(sys.argv[1]))
""")


@pytest.mark.integration  # another process holds the cache
def test_a_call_that_waits_for_another_process_names_it_once(monkeypatch):
    heard: list[str] = []
    monkeypatch.setattr(local, "TURNS", local._Turns())
    local.TURNS.note = heard.append
    other = subprocess.Popen([sys.executable, "-c", HOLD, "1.0"], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"  # the other process holds the model now
        with local.machine_turn():
            pass
        with local.machine_turn():  # no wait, nothing said
            pass
    finally:
        other.wait(30)
    assert heard == [f"embedded judge: waiting for the model, which process {other.pid} (another run of the embedded judge) is using; "
                     "the two runs take turns call by call, and the time left is estimated from the time spent judging"]
    assert local.TURNS.waited > 0
