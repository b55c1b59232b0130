"""A run through the provider's batch API (``judge.batch``, ``ragjudge score --batch``): OpenAI's
Batch API (``transports.openai_batch``; Azure OpenAI's is the same) or Anthropic's Message
Batches (``transports.anthropic_batch``). Half the price, an answer within 24 hours, resumable by
any later process with the same cache and manifest.

Decisions are made after the cache, so a batch run is the ordinary run with its calls made
another way (``advance``):

1. **collect**: the batches the manifest (``ragjudge.transports.batch.Manifest``) names as
   open are polled once (``--batch-wait``: until each is done, ``judge.batch_poll`` seconds
   apart; a batch that answers 404 within ``NOT_FOUND_GRACE_S`` of its create is polled again);
   a finished one's output and error files are read into the manifest's replies and the calls'
   states;
2. **find**: the run's rows are judged once more (``engine.score_source``, nothing written)
   with a transport that answers from the replies and writes down every call still to make
   (``BatchTransport``): the calls not in the cache and not answered, the failed and expired
   lines sent fewer than three times, and the next round's (completeness's coverage calls
   follow the statements calls the last round answered; an unreadable reply's re-ask follows it);
3. **submit**: those calls as one batch (50,000 lines at most each), the manifest saved before
   the batch is created; a create that got no answer (a 5xx, a gateway's 504, a process killed
   before it saved the id) has its batch looked for in the provider's listing before anything is
   submitted again (``_made_before``): found, it is collected; ruled out, its calls go again;
   neither, the run stops (``BatchUnsure``, exit 3) unless ``--batch-resubmit`` accepts the risk
   of a second batch billed twice;
4. with nothing left to find, the run finishes as a warm re-run: the final pass answers every
   call from the replies (priced at the batch price, then cached) or the cache.

Without ``--batch-wait`` a run that submitted, or found batches still running, stops after
step 3 with ``EXIT_SUBMITTED`` (4): "submitted, not yet judged"; running the same command
again collects.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragjudge import _loop
from ragjudge.errors import ConfigError, ProviderFatalError, RagjudgeError, EXIT_JUDGE_ERRORS
from ragjudge.run.engine import score_source
from ragjudge.plan import Note, events
from ragjudge.transports import base, choose
from ragjudge.transports.base import TransportError
from ragjudge.transports.batch import FAILED, OPEN, BatchTransport, Manifest
from ragjudge.transports.openai_batch import DONE
from ragjudge.prices import TokenCounter, cost
from ragjudge.cache import default_cache_dir
from ragjudge.io.atomic import to_file
from ragjudge.run.checks import client_for
from ragjudge.run.request import Wishes
from ragjudge.io import is_stdin

MAX_LINES = 50_000  # OpenAI's limit of requests per batch
NOT_FOUND_GRACE_S = 600.0  # a batch that answers 404 within this many seconds of its create is polled again (a lagging read side)
UNSEEN = "just created, not found yet"  # the status of a batch just created that its provider does not show yet


class BatchAPIError(RagjudgeError):
    """The batch API refused or failed a request that is not a call (upload, create, poll). Exit 3."""

    exit_code = EXIT_JUDGE_ERRORS


class BatchUnsure(BatchAPIError):
    """A batch whose create got no answer may exist at the provider, and its listing cannot rule
    it out: its calls are not submitted again (they would be billed twice) unless the run says
    so (``--batch-resubmit``). Exit 3."""


@dataclass(frozen=True)
class BatchProgress:
    """An event of ``--batch-wait``: the open batches' calls, ``done`` of ``total`` (completed
    and failed, as the provider counts them), and the batches' ``status``."""

    done: int
    total: int
    status: str


@dataclass
class BatchStep:
    """Where a batch run stands after ``advance``: ``pending`` (submitted or still running: the
    run stops with exit 4), ``transport`` (the final pass's, when not pending), ``folder`` (the
    manifest's), ``submitted`` (calls submitted by this process), ``batches`` (the ids of the
    batches still open), ``lines`` (what the command prints)."""

    pending: bool
    folder: str
    transport: Any = None
    submitted: int = 0
    batches: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def folder_for(request: Any, config: Any) -> Path:
    """The batch folder of ``request``: the one a collected manifest is in (``batch_folder``), else
    ``OUTPUT.batch`` beside a scored table written to a file,
    else ``batches/DIGEST`` in the cache folder (the digest of the source, the metrics and the model)."""
    if getattr(request, "batch_folder", None):  # batch collect MANIFEST: the folder it names, wherever it was moved or copied
        return Path(request.batch_folder)
    if to_file(request.output):
        return Path(str(request.output).rstrip("/") + ".batch")

    source = os.path.abspath(request.source) if isinstance(request.source, str) else "DataFrame"
    digest = hashlib.sha256(json.dumps([source, list(config.metrics), config.judge.model, config.judge.api_base]).encode()).hexdigest()[:16]
    return Path(config.cache.dir or default_cache_dir()) / "batches" / digest


def advance(request: Any, config: Any, source: Any, on_event: Any = None, transport: Any = None) -> BatchStep:
    """Take a batch run as far as it goes now (the module docstring's steps); returns the
    ``BatchStep``. ``source``: the run's ``ragjudge.run.source.Source``; ``transport``: the transport of direct
    calls (default: the model's); the request checked (``ragjudge.run.checks.check_batch``). Raises ``BatchAPIError`` /
    ``ProviderFatalError`` (exit 3) when the batch API fails outside a call."""
    hear = events(on_event)
    folder = folder_for(request, config)
    with _locked(folder):
        return _advance(request, config, folder, source, hear, transport)


def _locked(folder: Path) -> Any:
    """An exclusive lock on the batch folder (``.lock``, ``fcntl.flock``) for one process's
    collect, find and submit: two processes at once could both submit the next round. Raises
    ``ConfigError`` naming the fix when another process holds it."""
    from contextlib import contextmanager

    @contextmanager
    def hold() -> Any:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".lock", "a+") as handle:
            try:
                import fcntl
            except ImportError:  # no flock on this platform: one process at a time is the user's to keep
                yield
                return
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise ConfigError(f"another ragjudge process is collecting or submitting the batches of {folder}: let it finish, "
                                  "then run again") from None
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        if not (folder / "manifest.json").exists():  # nothing was submitted (every call cached): no folder left behind
            (folder / ".lock").unlink(missing_ok=True)
            try:
                folder.rmdir()
            except OSError:
                pass

    return hold()


def _advance(request: Any, config: Any, folder: Path, source: Any, hear: Any, transport: Any) -> BatchStep:
    judge = config.judge
    manifest = Manifest(folder)
    inner = transport if transport is not None else choose(judge, str(config.cache.dir) if config.cache.dir else None)
    client = client_for(judge)
    wait = bool(getattr(request, "batch_wait", False))
    resubmit = bool(getattr(request, "batch_resubmit", False))
    submitted = 0
    try:
        for key, now in (("model", inner.provider_model), ("api_base", client.base)):
            was = manifest.data.setdefault(key, now)
            if was != now and manifest.batches:  # another endpoint knows nothing of these batches, or worse, has others by their ids
                raise ConfigError(f"{manifest.path}: its batches were submitted to {key} {was}; this run has {now}: give the same "
                                  f"{'--model' if key == 'model' else '--api-base'} to collect them (or remove {manifest.folder} to submit "
                                  "again)")
        manifest.data["run"] = _run_record(request, config)
        while True:
            _loop.run(collect(manifest, client, wait, judge.batch_poll, hear, resubmit))
            still = manifest.open_batches()
            if still:
                return _pending(manifest, submitted, still)
            wanted = find(request, config, manifest, inner, client.reply, source)
            if not wanted:
                break
            _check_budget(judge, inner.provider_model, wanted)
            ids = _loop.run(submit(manifest, client, wanted, resubmit))
            submitted += len(wanted)
            if hear:
                hear(Note(f"batch: submitted {len(wanted)} call(s) in {', '.join(ids)} (round {manifest.batches[-1]['round']})"))
            if not wait:
                return _pending(manifest, submitted, manifest.open_batches())
    except KeyboardInterrupt:  # Ctrl-C while waiting: what was submitted runs on at the provider, and is paid
        if manifest.exists and manifest.open_batches():
            raise KeyboardInterrupt(f"interrupted: no table was written; the batch(es) submitted keep running at the provider (paid): "
                                    f"run the same command again, or ragjudge batch collect {manifest.path}, to collect them") from None
        raise
    finally:
        _loop.run(client.aclose())
    final = BatchTransport(inner, manifest, client.reply, final=True, fallback=judge.batch_fallback)
    if hear and manifest.batches:
        failed = sum(1 for call in manifest.calls.values() if call.get("state") == FAILED)
        hear(Note(f"batch: {len(manifest.replies())} call(s) answered in {len(manifest.batches)} batch(es), priced at the batch price"
                  + (f"; {failed} failed ({'judged directly' if judge.batch_fallback == 'direct' else 'error rows'})" if failed else "")
                  + f"; manifest {manifest.path}"))
    return BatchStep(False, str(manifest.folder), final, submitted)


def _run_record(request: Any, config: Any) -> dict[str, Any]:
    """What the manifest records of the run: the request's plain fields and the config."""
    from dataclasses import fields

    plain = {f.name: getattr(request, f.name) for f in fields(request)
             if isinstance(getattr(request, f.name), (str, int, float, bool, type(None)))}
    # the settings given, not the defaults: read back, a default would count as set (a gate bound on a metric that judged no row)
    dumped = json.loads(config.model_dump_json(exclude_unset=True))
    if "gate" in dumped:  # as given: a min_pass_rate of one number for every metric is not every metric named (bounds_set)
        dumped["gate"] = config.gate_given()
    return {"request": plain, "cwd": os.getcwd(), "config": dumped}


PATH_FIELDS = ("source", "output", "summary_json", "junit", "markdown", "html", "baseline", "annotations")


def recorded_run(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request's fields and the config (as a dict) that the manifest at ``path`` (a
    ``manifest.json``, or its batch folder) records, relative paths made absolute from the
    folder the run was started in. Raises ``ConfigError`` (exit 2) for a manifest that is
    missing or unreadable, or a run whose source was a DataFrame."""
    folder = Path(path)
    manifest_path = folder / "manifest.json" if folder.is_dir() else folder
    try:
        data = json.loads(manifest_path.read_text(encoding="utf-8"))
        record = data["run"]
        fields, config, cwd = dict(record["request"]), record["config"], record.get("cwd") or os.getcwd()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"no batch manifest readable at {path} ({type(exc).__name__}: {exc}); give the manifest.json a --batch "
                          "run printed (batch: manifest PATH)") from None
    if "source" not in fields:
        raise ConfigError(f"{path}: the run's source was a DataFrame, which a manifest cannot hold: call evaluate() again with it")
    for name in PATH_FIELDS:
        value = fields.get(name)
        if isinstance(value, str) and to_file(value) and not is_stdin(value) and ":" not in value.split("/")[0] and not os.path.isabs(value):
            fields[name] = os.path.join(cwd, value)
    cache = config.get("cache") if isinstance(config, dict) else None
    if isinstance(cache, dict) and isinstance(cache.get("dir"), str) and not os.path.isabs(cache["dir"]):
        cache["dir"] = os.path.join(cwd, cache["dir"])  # the replies the run paid for, whatever folder collects them
    return fields, config


def _pending(manifest: Manifest, submitted: int, still: list[dict[str, Any]]) -> BatchStep:
    ids = [str(b.get("id") or b["input_file_id"]) for b in still]
    waiting = sum(1 for entry in manifest.calls.values() if entry.get("state") == OPEN)
    lines = []
    if submitted:
        lines.append(f"batch: submitted {submitted} call(s); {waiting} call(s) in {len(ids)} open batch(es): {', '.join(ids)}")
    else:
        states = ", ".join(f"{b.get('id')}: {b.get('status')}" + (f" ({b['counts'][1]}/{b['counts'][0]} done)" if b.get("counts") else "")
                           for b in still)
        lines.append(f"batch: {waiting} call(s) still in {len(ids)} open batch(es): {states}")
    lines.append(f"batch: manifest {manifest.path}")
    lines.append("batch: submitted, not yet judged (exit 4): run the same command again to collect and finish (add --batch-wait "
                 f"to wait), or: ragjudge batch collect {manifest.path}")
    return BatchStep(True, str(manifest.folder), None, submitted, ids, lines)


def floor_cost(provider_model: str, wanted: dict[str, Any]) -> float | None:
    """The least the calls ``wanted`` (custom_id -> ``Request``) cost through the batch API, in
    USD: their prompt tokens at the batch price (``ragjudge.prices``; replies cost more). None where
    the model has no price."""
    provider, _, name = provider_model.partition("/")
    count = TokenCounter(provider_model)
    tokens = sum(count(request.messages) for request in wanted.values())
    return cost(provider, [name], tokens, 0, batch=True)


def _check_budget(judge: Any, provider_model: str, wanted: dict[str, Any]) -> None:
    """Refuse (``ConfigError``, exit 2, nothing submitted) a batch whose prompt tokens alone cost
    more than ``judge.max_cost``: a batch is paid whole once submitted, so the budget cannot stop
    it half-way as it stops direct calls."""
    if judge.max_cost is None:
        return
    low = floor_cost(provider_model, wanted)
    if low is not None and low > judge.max_cost:
        raise ConfigError(f"--max-cost {judge.max_cost:g}: the {len(wanted)} call(s) to submit cost at least ${low:.4f} at the batch price "
                          "(their prompt tokens alone), and a batch is paid whole once submitted; nothing was submitted: raise "
                          "--max-cost, or judge fewer rows (--limit N, --sample N)")


def find(request: Any, config: Any, manifest: Manifest, inner: Any, reply: Any, source: Any) -> dict[str, Any]:
    """The calls the run still needs (custom_id -> ``Request``): a pass over the rows with a
    finding ``BatchTransport`` (``reply``: the client's reader of a collected reply), nothing
    written, nothing cached."""
    finder = BatchTransport(inner, manifest, reply, final=False, fallback=config.judge.batch_fallback)
    score_source(source, config, request.selection, wishes=Wishes(), flag_fields=request.flag_fields, transport=finder)
    return finder.wanted


async def submit(manifest: Manifest, client: Any, wanted: dict[str, Any], resubmit: bool = False) -> list[str]:
    """Upload ``wanted`` (custom_id -> ``Request``) and create its batches (``MAX_LINES`` lines
    each); the manifest is saved after the upload and again after the create (``_create``;
    ``resubmit``: as there). Returns the batches' ids."""
    number = 1 + max((int(b.get("round") or 0) for b in manifest.batches), default=0)
    lines = [client.line(cid, request) for cid, request in wanted.items()]
    ids = []
    for start in range(0, len(lines), MAX_LINES):
        part = lines[start:start + MAX_LINES]
        file_id = await _call(client.upload(part))
        entry: dict[str, Any] = {"id": None, "input_file_id": file_id, "round": number, "status": "uploaded"}
        manifest.submitted(entry, [line["custom_id"] for line in part])
        await _create(manifest, client, entry, resubmit)
        ids.append(entry["id"])
    return ids


async def _create(manifest: Manifest, client: Any, entry: dict[str, Any], resubmit: bool = False) -> dict[str, Any]:
    """Create the batch of ``entry``'s uploaded file, or find the one an earlier create made
    without its answer reaching this process (a 5xx, a gateway's 504, a process killed before it
    saved the id: ``_made_before``); save its id. ``resubmit``: create it again where the
    provider's listing cannot rule an earlier one out (else ``BatchUnsure``)."""
    made = None
    if entry.get("create_tried"):
        made = await _made_before(manifest, client, entry, resubmit)
    if made is None:
        entry["create_tried"] = True
        manifest.save()
        try:
            made = await _call(client.create(entry["input_file_id"], {"made_by": "ragjudge", "round": str(entry["round"])}))
        except BatchAPIError as failed:  # a 5xx or a dropped connection: the batch may have been made all the same
            made = await _made_before(manifest, client, entry, resubmit, failed)
            if made is None:  # ruled out, or the risk accepted: the next run submits again (never in a loop here)
                raise
    _made(manifest, entry, made)
    return made


def _made(manifest: Manifest, entry: dict[str, Any], made: dict[str, Any]) -> None:
    """Write down the id and status of ``entry``'s batch, ``made``, and when this process learnt
    it (``created``, Unix seconds: a 404 soon after is polled again, ``_poll``)."""
    entry["id"] = made["id"]
    entry["status"] = made.get("status")
    entry.setdefault("created", time.time())
    manifest.save()


async def _poll(client: Any, entry: dict[str, Any]) -> dict[str, Any] | None:
    """The batch object of ``entry`` (``client.get``), or None for a batch created less than
    ``NOT_FOUND_GRACE_S`` seconds ago that answers 404: a provider's read side may lag its
    write side (anthropics/anthropic-sdk-python#1432), so it is polled again. A 404 later than
    that raises ``ProviderFatalError`` (exit 3) as before, naming how long ago it was created."""
    try:
        return await client.get(entry["id"])
    except TransportError as err:
        if err.kind != base.NOT_FOUND:
            raise _error_of(err) from None
        age = time.time() - float(entry.get("created") or entry.get("submitted_at") or 0.0)
        if age < NOT_FOUND_GRACE_S:
            return None
        raise ProviderFatalError(f"batch API: batch {entry['id']} is not found ({err}) {age:.0f} s after it was created: check "
                                 "that the key and the API base are those that submitted it") from None


async def _made_before(manifest: Manifest, client: Any, entry: dict[str, Any], resubmit: bool,
                       failed: BatchAPIError | None = None) -> dict[str, Any] | None:
    """The batch an earlier create of ``entry`` made, looked for in the provider's listing
    (``client.search``: OpenAI's by the input file, Anthropic's by the results' custom_ids), or
    None where the listing rules it out. Where it cannot (a batch of as many requests still
    running, a listing that does not reach back far enough) raises ``BatchUnsure`` naming the
    risk and ``--batch-resubmit``, unless ``resubmit``. ``failed``: the create's own error, said
    in the message."""
    ids = [cid for cid, call in manifest.calls.items() if call.get("batch") == entry["input_file_id"]]
    if not ids:  # no call waits on it: nothing to find, nothing to send twice
        return None
    found, doubt = await _call(client.search(entry, ids))
    if found is not None or doubt is None or resubmit:
        return found
    what = f"the create of the batch of round {entry.get('round')} ({len(ids)} call(s)) " + (
        f"failed ({failed})" if failed is not None else "got no answer")
    raise BatchUnsure(f"{what}, and the provider may have made that batch all the same: {doubt}. Submitting its calls again could "
                      "make a second batch, billed twice, so nothing was submitted: run the same command again later (a batch that "
                      "has ended is checked by its requests' custom ids), or add --batch-resubmit (batch_resubmit=True in Python) to "
                      f"submit them again and accept that risk. Manifest: {manifest.path}")


async def _call(coro: Any) -> Any:
    """A batch API request; its ``TransportError`` as ``ProviderFatalError`` (auth, quota, not
    found) or ``BatchAPIError``."""
    try:
        return await coro
    except TransportError as err:
        raise _error_of(err) from None


def _error_of(err: TransportError) -> RagjudgeError:
    """A batch API request's ``TransportError`` as the error the run raises."""
    if err.kind in base.FATAL:
        return ProviderFatalError(f"batch API: {err}")
    return BatchAPIError(f"batch API: {err}; run the same command again to retry (a batch made without its answer is looked for "
                         "first)")


def _never_sent(manifest: Manifest, entry: dict[str, Any]) -> None:
    """A batch entry whose requests were never sent: its calls go into the next batch (the try
    not counted), the entry is closed."""
    for call in manifest.calls.values():
        if call.get("state") == OPEN and call.get("batch") == entry["input_file_id"]:
            call.update(state=FAILED, error="never sent", tries=max(0, int(call.get("tries") or 1) - 1))
    entry.update(collected=True, status="never sent")
    manifest.save()


async def collect(manifest: Manifest, client: Any, wait: bool, poll: float, hear: Any = None, resubmit: bool = False) -> None:
    """Poll the open batches; read the finished ones' files into the manifest; with ``wait``,
    until none is open (``poll`` seconds apart), telling ``hear`` each ``BatchProgress``. An
    entry whose create got no answer is looked for first (``_made_before``; ``resubmit``: its
    calls are submitted again where an earlier batch cannot be ruled out)."""
    while True:
        still = manifest.open_batches()
        if not still:
            return
        done = total = 0
        states = []
        for entry in still:
            if entry.get("id") is None and not client.holds(entry["input_file_id"]):
                # Anthropic's requests are inline, lost with the process that was to send them: never sent, unless a create
                # was tried (its batch may exist: looked for first)
                made = await _made_before(manifest, client, entry, resubmit) if entry.get("create_tried") else None
                if made is None:
                    _never_sent(manifest, entry)
                    continue
                _made(manifest, entry, made)
            elif entry.get("id") is None:
                made = await _create(manifest, client, entry, resubmit)
            else:
                made = await _poll(client, entry)
            if made is None:  # just created and not shown yet: polled again
                count = int(entry.get("calls") or 0)
                entry["status"], entry["counts"] = UNSEEN, [count, 0]
                total += count
                states.append(UNSEEN)
                manifest.save()
                continue
            status, count, completed, failed = client.status(made)
            entry["status"], entry["counts"] = status, [count, completed + failed]
            done, total = done + completed + failed, total + count
            states.append(status)
            if status in DONE:
                for file_id in client.files(made):
                    manifest.record(client.results(await _call(client.content(file_id))))
                why = client.batch_errors(made) or f"the batch ended {status}"
                for cid, call in manifest.calls.items():  # lines the files did not name: failed with the batch's reason
                    if call.get("state") == OPEN and call.get("batch") == entry["input_file_id"]:
                        manifest.fail(cid, f"batch {status}: {why}")
                entry["collected"] = True
            manifest.save()
        if hear:
            hear(BatchProgress(done, total, ", ".join(sorted(set(states)))))
        if not wait or not manifest.open_batches():
            return
        await asyncio.sleep(poll)
