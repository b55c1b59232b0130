#!/usr/bin/env python3
"""The logic of ragjudge's GitHub Action (``action.yml`` at the top of the checkout only wires its
inputs to this script). Three steps, each a subcommand:

    python scripts/ci_action.py prepare   # the response cache's key; the default branch's last scored table
    python scripts/ci_action.py score     # ragjudge score with the action's inputs; its exit code as an output
    python scripts/ci_action.py comment   # the one pull request comment: created once, then edited

Inputs are environment variables ``INPUT_<NAME>`` (the action's input, upper-cased, ``-`` as ``_``:
``INPUT_MIN_PASS_RATE``) and an earlier step's outputs ``STEP_<NAME>`` (``STEP_EXIT_CODE``), both set
by ``action.yml``'s ``env:``; the rest is what GitHub Actions sets:
``GITHUB_API_URL``, ``GITHUB_REPOSITORY``, ``GITHUB_EVENT_NAME``, ``GITHUB_EVENT_PATH`` (the event's
JSON), ``GITHUB_SERVER_URL``, ``GITHUB_RUN_ID``, ``GITHUB_OUTPUT`` (where step outputs go),
``RUNNER_OS``, ``RUNNER_TEMP``, and ``GITHUB_TOKEN`` (the action passes its ``github-token`` input).

Each subcommand writes its outputs to ``GITHUB_OUTPUT`` (printed as ``name=value`` when that is not
set) and exits 0 when it did its work, whatever the gate said: ``score`` hands ragjudge's exit code
on as the output ``exit-code`` so that the artifacts and the comment are written first, and the
action's last step exits with it. GitHub's REST API is reached with httpx (a dependency of
litellm, so in ragjudge's lock); an API error (a status that is not 2xx, no answer at all, an
answer that is not GitHub's JSON such as a proxy's sign-in page) is a warning in the log that
says which, never a failed job: the gate decides that. Exit 2 is a usage error of the script
itself (an unknown subcommand, no ``table``).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path
from typing import Any, Iterator

API_VERSION = "2022-11-28"  # GitHub's REST API version asked for (X-GitHub-Api-Version)
CACHE_PREFIX = "ragjudge-v1"  # bump to drop every cache saved before
SCORED = "scored.parquet"  # the scored table's name in the out folder and in the artifact
OUTPUT_FILES = {"scored": SCORED, "summary-json": "summary.json", "markdown": "summary.md", "html": "report.html",
                "junit": "junit.xml"}
COMMENT_LIMIT = 65536  # GitHub refuses a longer comment body
PAGES = 50  # pages of 100 read at most when listing comments or artifacts
PR_EVENTS = ("pull_request", "pull_request_target")
EXITS = {0: "every gate passed", 1: "a quality gate failed", 2: "bad input, config or usage",
         3: "the judges could not run for too many rows", 4: "submitted to the batch API, not yet judged", 130: "interrupted"}


class GitHubError(Exception):
    """A request to GitHub's REST API that failed: the message names the request, the status and
    GitHub's own message. ``status``: the HTTP status of an answer that was not 2xx, 200 (or
    another 2xx) for an answer that was not the JSON asked for (a proxy's login page), None when
    no answer came (a refused connection, a name that does not resolve, a timeout)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    def hint(self, permission: str) -> str:
        """What the log says after this failure's message: a missing permission (``permission``,
        as the job's ``permissions:`` names it) only where GitHub answered 401, 403 or 404, as it
        does for a token without it; else that the API was not reached, or answered what no
        permission explains (a page that is not JSON, a 5xx)."""
        if self.status in (401, 403, 404):
            return f"; the job needs permissions: {permission}"
        if self.status is None:
            return "; GitHub's API was not reached (GITHUB_API_URL, a proxy or the network), not a missing permission"
        return "; not a missing permission (GitHub or a proxy in between answered so)"


# -- the environment GitHub Actions gives a step ------------------------------------------------


def given(name: str) -> str:
    """The action's input ``name`` (``min-pass-rate``) from ``INPUT_MIN_PASS_RATE``, stripped; "" when unset."""
    return os.environ.get("INPUT_" + name.upper().replace("-", "_"), "").strip()


def wired(name: str) -> str:
    """An earlier step's output that ``action.yml`` hands on as ``STEP_<NAME>`` (``baseline`` from
    ``STEP_BASELINE``), stripped; "" when unset."""
    return os.environ.get("STEP_" + name.upper().replace("-", "_"), "").strip()


def flag(name: str, default: bool) -> bool:
    """A true/false input: true, yes, on, 1 (any case) are true; unset or empty is ``default``."""
    text = given(name).lower()
    return default if not text else text in ("true", "yes", "on", "1")


def items(text: str) -> list[str]:
    """The items of an input that lists several (``sufficiency=0.9 completeness=0.8``, or with
    commas, or one a line)."""
    return [item for item in re.split(r"[\s,]+", text) if item]


def set_outputs(outputs: dict[str, str]) -> None:
    """Append ``outputs`` to the file ``GITHUB_OUTPUT`` names, each as ``name<<DELIMITER`` lines
    (a value may hold newlines); printed as ``name=value`` when that variable is not set."""
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        for name, value in outputs.items():
            print(f"{name}={value}")
        return
    with open(path, "a", encoding="utf-8") as handle:
        for name, value in outputs.items():
            delimiter = f"ragjudge_{uuid.uuid4().hex}"
            handle.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def event() -> dict[str, Any]:
    """The event's payload (``GITHUB_EVENT_PATH``), {} when there is none."""
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path or not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def out_dir() -> Path:
    """Where the run's files go: the ``output-dir`` input, else ``$RUNNER_TEMP/ragjudge``."""
    return Path(given("output-dir") or os.path.join(os.environ.get("RUNNER_TEMP") or ".", "ragjudge"))


def log(line: str) -> None:
    print(f"ragjudge: {line}", flush=True)


def warn(line: str) -> None:
    print(f"::warning::ragjudge: {line}", flush=True)


# -- GitHub's REST API ---------------------------------------------------------------------------


class GitHub:
    """GitHub's REST API for one repository: ``api_url`` (GITHUB_API_URL), ``repo`` ("owner/name"),
    ``token``. Redirects are followed without the token when they leave the API's origin (an
    artifact's signed download URL). Every method raises ``GitHubError``."""

    def __init__(self, api_url: str, repo: str, token: str, timeout: float = 30.0) -> None:
        import httpx

        self.repo = repo
        self.client = httpx.Client(
            base_url=api_url.rstrip("/") + "/", timeout=timeout, follow_redirects=True,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                     "X-GitHub-Api-Version": API_VERSION, "User-Agent": "ragjudge-action"})

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """The response of ``method path`` (relative to the API's URL, or absolute) after a 2xx."""
        import httpx

        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise GitHubError(f"{method} {self.client.base_url.join(path)}: no answer ({type(exc).__name__}: {exc})") from exc
        if response.status_code >= 300:
            try:
                message = response.json().get("message", "")
            except (ValueError, AttributeError):
                message = " ".join(response.text[:200].split())
            raise GitHubError(f"{method} {response.request.url.path}: {response.status_code} {message}".rstrip(), response.status_code)
        return response

    def data(self, method: str, path: str, **kwargs: Any) -> tuple[Any, Any]:
        """``(the JSON of the answer, the response)`` of ``request``; ``GitHubError`` when a 2xx
        answer is not JSON (a proxy's or a captive portal's HTML page answers 200)."""
        response = self.request(method, path, **kwargs)
        try:
            return response.json(), response
        except ValueError:
            kind = response.headers.get("content-type", "no content type").split(";")[0]
            start = " ".join(response.text[:80].split())
            raise GitHubError(f"{method} {response.request.url.path}: {response.status_code} answered {kind}, not JSON "
                              f"(a proxy's or a login page?): {start!r}", response.status_code) from None

    def pages(self, path: str, params: dict[str, Any], key: str | None = None) -> Iterator[dict]:
        """Every item of a listing, page after page (100 a page, following the ``Link`` header's
        ``next``, at most ``PAGES`` pages); ``key`` names the list in an object answer.
        ``GitHubError`` when a page is not such a list."""
        url: str | None = path
        query: dict[str, Any] | None = {**params, "per_page": 100}
        for _ in range(PAGES):
            data, response = self.data("GET", url, params=query)
            found = data.get(key) if key and isinstance(data, dict) else (None if key else data)
            if not isinstance(found, list) or not all(isinstance(item, dict) for item in found):
                raise GitHubError(f"GET {response.request.url.path}: {response.status_code} answered JSON that is not a list of "
                                  f"{key or 'items'}", response.status_code)
            yield from found
            url, query = response.links.get("next", {}).get("url"), None
            if not url:
                return

    def comments(self, number: int) -> Iterator[dict]:
        return self.pages(f"repos/{self.repo}/issues/{number}/comments", {})

    def create_comment(self, number: int, body: str) -> dict:
        return self.object("POST", f"repos/{self.repo}/issues/{number}/comments", json={"body": body})

    def update_comment(self, comment_id: int, body: str) -> dict:
        return self.object("PATCH", f"repos/{self.repo}/issues/comments/{comment_id}", json={"body": body})

    def artifacts(self, name: str) -> Iterator[dict]:
        return self.pages(f"repos/{self.repo}/actions/artifacts", {"name": name}, key="artifacts")

    def repository(self) -> dict:
        return self.object("GET", f"repos/{self.repo}")

    def object(self, method: str, path: str, **kwargs: Any) -> dict:
        """The JSON object of ``data``; ``GitHubError`` when the answer is JSON but no object."""
        data, response = self.data(method, path, **kwargs)
        if not isinstance(data, dict):
            raise GitHubError(f"{method} {response.request.url.path}: {response.status_code} answered JSON that is not an object",
                              response.status_code)
        return data

    def download(self, url: str) -> bytes:
        return self.request("GET", url).content


def github(token: str) -> GitHub:
    return GitHub(os.environ.get("GITHUB_API_URL", "https://api.github.com"), os.environ.get("GITHUB_REPOSITORY", ""), token)


def run_url(run_id: str | int) -> str:
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    return f"{server}/{os.environ.get('GITHUB_REPOSITORY', '')}/actions/runs/{run_id}"


# -- prepare: the cache key and the baseline -------------------------------------------------------


def digest(target: str) -> str:
    """12 hex digits of SHA-256 over ``target``'s bytes: a file's content, a folder's files or a
    glob's matches (their paths and contents, sorted), else the text itself (a bundled config's
    name, a trace source such as ``mlflow:EXPERIMENT``, whose content is on a server); ``none``
    for "". Only the restore keys' order depends on it: what is saved is keyed by the cache's
    own content (``cache_fingerprint``)."""
    if not target:
        return "none"
    hasher = hashlib.sha256()
    path = Path(target)
    if path.is_file():
        hasher.update(path.read_bytes())
    elif path.is_dir():
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            hasher.update(child.relative_to(path).as_posix().encode() + b"\0" + child.read_bytes())
    elif any(ch in target for ch in "*?["):
        matched = sorted(p for p in glob.glob(target, recursive=True) if Path(p).is_file())
        hasher.update(target.encode() + b"\0")
        for child in matched:
            hasher.update(Path(child).as_posix().encode() + b"\0" + Path(child).read_bytes())
    else:
        hasher.update(target.encode())
    return hasher.hexdigest()[:12]


def judge_model(config: str, model: str) -> str:
    """The judge model a run with ``-c config`` and ``--model model`` uses (the input, else the
    config's ``judge.model``, else ragjudge's default); the input as given when the config
    cannot be read (the score step then says why)."""
    try:
        from ragjudge.errors import RagjudgeError
        from ragjudge.options import load_layers
    except ImportError:
        return model or "default"
    try:
        return load_layers(config or None, {"model": model or None}).config.judge.model
    except (RagjudgeError, OSError):
        return model or "default"


def cache_key(table: str, config: str, model: str, runner_os: str) -> tuple[str, list[str]]:
    """``(key, restore_keys)`` of the response cache for actions/cache/restore: the runner's OS,
    the judge model, the config file's hash and the table's hash (``digest``). No cache is
    saved under ``key`` itself: the score step saves one under ``key-FINGERPRINT`` (the cache's
    own content, ``cache_fingerprint``) when the run added replies, so the first restore key,
    ``key-``, finds the newest, fullest cache of this very table, config and model, whatever
    the table's form (a glob or a trace source grown since, a run whose judges failed for some
    rows). Then the newest cache of the same model and config (only changed rows are judged),
    then of the same model. Cached replies are keyed by their whole prompt inside ragjudge, so a
    restored older cache never answers a changed prompt."""

    def slug(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:80]

    by_model = f"{CACHE_PREFIX}-{slug(runner_os or 'runner')}-{slug(judge_model(config, model))}-"
    by_config = f"{by_model}{digest(config)}-"
    key = by_config + digest(table)
    return key, [key + "-", by_config, by_model]


def cache_entries(cache_dir: str) -> set[str]:
    """The keys of the response cache ragjudge keeps under ``cache_dir`` (its diskcache in
    ``cache_dir/responses``, opened with diskcache itself); empty when there is none or it
    cannot be read (a damaged file: a log line says so)."""
    import sqlite3

    folder = Path(cache_dir) / "responses"
    if not cache_dir or not (folder / "cache.db").is_file():
        return set()
    import diskcache

    try:
        with diskcache.Cache(str(folder)) as cache:
            return {str(key) for key in cache.iterkeys()}
    except (OSError, sqlite3.Error) as exc:  # a damaged cache: ragjudge says so itself; nothing to save from it
        log(f"response cache: {folder} cannot be read ({exc}); taken as empty")
        return set()


def cache_fingerprint(entries: set[str]) -> str:
    """12 hex digits of SHA-256 over the sorted cache keys ``entries``: the same replies, the
    same fingerprint, so two runs that cached the same replies save one cache."""
    return hashlib.sha256("\n".join(sorted(entries)).encode()).hexdigest()[:12]


def find_baseline(api: GitHub, name: str, payload: dict[str, Any]) -> dict | None:
    """The newest unexpired artifact ``name`` uploaded by a run on the default branch of this
    repository (not a fork's branch of the same name, not this run), or None."""
    repository = payload.get("repository") or {}
    if not repository.get("default_branch") or not repository.get("id"):
        repository = api.repository()
    branch, repository_id = repository["default_branch"], repository["id"]
    this_run = os.environ.get("GITHUB_RUN_ID", "")
    found = [a for a in api.artifacts(name)
             if a.get("name") == name and not a.get("expired")
             and (a.get("workflow_run") or {}).get("head_branch") == branch
             and (a["workflow_run"].get("head_repository_id") in (None, repository_id))
             and str(a["workflow_run"].get("id")) != this_run]
    return max(found, key=lambda a: a.get("created_at") or "", default=None)


def fetch_baseline(api: GitHub, name: str, payload: dict[str, Any], folder: Path) -> tuple[Path, str] | None:
    """Download the default branch's last scored table (artifact ``name``) into ``folder``: its
    path and the URL of the run that scored it, or None when there is none (a line says why)."""
    artifact = find_baseline(api, name, payload)
    if artifact is None:
        log(f"no baseline: no artifact '{name}' from the default branch yet (its first run uploads one); no comparison")
        return None
    with zipfile.ZipFile(io.BytesIO(api.download(artifact["archive_download_url"]))) as archive:
        if SCORED not in archive.namelist():
            log(f"no baseline: artifact '{name}' (id {artifact['id']}) holds no {SCORED}; no comparison")
            return None
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / SCORED
        path.write_bytes(archive.read(SCORED))
    source = run_url(artifact["workflow_run"]["id"])
    log(f"baseline: {SCORED} of {source} (artifact '{name}', {artifact.get('created_at', '')})")
    return path, source


def prepare() -> int:
    table, config, model = given("table"), given("config"), given("model")
    key, restore = cache_key(table, config, model, os.environ.get("RUNNER_OS", ""))
    temp = Path(os.environ.get("RUNNER_TEMP") or ".")
    outputs = {"cache-key": key, "cache-restore-keys": "\n".join(restore), "cache-dir": str(temp / "ragjudge-cache"),
               "baseline": "", "baseline-run-url": ""}
    log(f"response cache key {key} (else the newest of {', '.join(restore)})")
    name = given("artifact-name") or "ragjudge-scored"
    token = os.environ.get("GITHUB_TOKEN", "")
    if not flag("baseline", True):
        log("no baseline: the input baseline is false; no comparison")
    elif not token:
        log("no baseline: no token (the input github-token is empty), so the default branch's artifacts cannot be read; no comparison")
    else:
        try:
            found = fetch_baseline(github(token), name, event(), temp / "ragjudge-baseline")
        except GitHubError as exc:
            warn(f"no baseline: reading the default branch's artifact '{name}' failed ({exc}){exc.hint('actions: read')}. "
                 "The run goes on without a comparison")
            found = None
        except (zipfile.BadZipFile, KeyError, TypeError) as exc:
            warn(f"no baseline: the default branch's artifact '{name}' could not be read ({type(exc).__name__}: {exc}). "
                 "The run goes on without a comparison")
            found = None
        if found:
            outputs["baseline"], outputs["baseline-run-url"] = str(found[0]), found[1]
    set_outputs(outputs)
    return 0


# -- score -----------------------------------------------------------------------------------------


def score_command(folder: Path, baseline: str, cache_dir: str) -> list[str]:
    """The ``ragjudge score`` command line the inputs ask for, writing every output into ``folder``."""
    command = [sys.executable, "-m", "ragjudge", "score", given("table"), "-o", str(folder / SCORED),
               "--summary-json", str(folder / OUTPUT_FILES["summary-json"]), "--markdown", str(folder / OUTPUT_FILES["markdown"]),
               "--html", str(folder / OUTPUT_FILES["html"]), "--junit", str(folder / OUTPUT_FILES["junit"])]
    if given("config"):
        command += ["-c", given("config")]
    for metric in items(given("metrics")):
        command += ["-m", metric]
    if given("model"):
        command += ["--model", given("model")]
    for option in ("min-pass-rate", "max-error-rate"):
        for item in items(given(option)):
            command += [f"--{option}", item]
    if cache_dir:
        command += ["--cache-dir", cache_dir]
    if baseline:
        command += ["--baseline", baseline]
        for option in ("max-regressions", "max-drop", "alpha"):
            if given(option):
                command += [f"--{option}", given(option)]
    elif given("max-regressions") or given("max-drop") or given("alpha"):
        log("no baseline, so max-regressions, max-drop and alpha are not applied on this run")
    return command + shlex.split(given("args"))


def score() -> int:
    if not given("table"):
        print("::error::ragjudge: the input 'table' is required (the evaluation table to score)", flush=True)
        return 2
    folder = out_dir()
    folder.mkdir(parents=True, exist_ok=True)
    cache_dir = wired("cache-dir")
    restored = cache_entries(cache_dir)
    command = score_command(folder, wired("baseline"), cache_dir)
    log("running " + shlex.join(["ragjudge", *command[3:]]))
    code = subprocess.run(command, check=False).returncode
    log(f"ragjudge score exited {code} ({EXITS.get(code, 'unexpected')})")
    outputs = {"exit-code": str(code), "dir": str(folder),
               **{name: str(folder / file) if (folder / file).exists() else "" for name, file in OUTPUT_FILES.items()}}
    outputs["cache-save-key"] = save_key(restored, cache_entries(cache_dir), wired("cache-key"))
    set_outputs(outputs)
    return 0


def save_key(restored: set[str], entries: set[str], key: str) -> str:
    """The key to save the response cache under after the run: ``key-FINGERPRINT`` when the run
    added replies to the ``restored`` ones (``entries`` holds keys that were not there), ""
    when it added none (every reply came from the cache, or every call failed): nothing new to
    pay for again, nothing saved. A log line says which."""
    added = len(entries - restored)
    if not key:
        log("response cache: no cache key (the prepare step's cache-key output), so not saved")
        return ""
    if not added:
        log(f"response cache: no new reply ({len(entries)} cached); not saved again")
        return ""
    chosen = f"{key}-{cache_fingerprint(entries)}"
    log(f"response cache: {added} new repl{'y' if added == 1 else 'ies'} ({len(entries)} cached); saved as {chosen}")
    return chosen


# -- comment ---------------------------------------------------------------------------------------


def marker(artifact: str) -> str:
    """The hidden first line that names ragjudge's comment (one per artifact name, so two jobs
    scoring two tables keep a comment each)."""
    return f"<!-- ragjudge: {artifact} -->"


def comment_body(head: str, summary: str | None, code: str, links: list[str]) -> str:
    """The comment: the marker line ``head``, the Markdown summary (or, when ragjudge wrote none,
    a line with its exit code), then ``links``; cut to GitHub's 65,536 characters."""
    footer = "\n\n---\n" + " · ".join(links) + "\n"
    if summary is None:
        text = f"## ragjudge: exit {code} ({EXITS.get(int(code) if code.isdigit() else -1, 'no summary')})\n\nNo summary was written: the job log says why."
    else:
        text = summary.strip()
    room = COMMENT_LIMIT - len(head) - len(footer) - 100
    if len(text) > room:
        text = text[:room].rsplit("\n", 1)[0] + "\n\n(cut here: the whole summary is on the run's page)"
    return f"{head}\n{text}{footer}"


def upsert_comment(api: GitHub, number: int, head: str, body: str) -> tuple[str, dict]:
    """Edit ragjudge's comment on pull request ``number`` (the first whose body starts with
    ``head``) to ``body``, or create it when there is none: ``("updated" | "unchanged" | "created", comment)``."""
    for comment in api.comments(number):
        if (comment.get("body") or "").lstrip().startswith(head):
            if comment.get("body") == body:
                return "unchanged", comment
            return "updated", api.update_comment(comment["id"], body)
    return "created", api.create_comment(number, body)


def comment() -> int:
    name = os.environ.get("GITHUB_EVENT_NAME", "")
    token = os.environ.get("GITHUB_TOKEN", "")
    payload = event()
    number = (payload.get("pull_request") or {}).get("number")
    if not flag("comment", True):
        log("no pull request comment: the input comment is false")
    elif name not in PR_EVENTS or not number:
        log(f"no pull request comment: not a pull request (event {name or 'unknown'})")
    elif not token:
        log("no pull request comment: no token (the input github-token is empty)")
    else:
        artifact = given("artifact-name") or "ragjudge-scored"
        markdown = Path(wired("dir") or out_dir()) / OUTPUT_FILES["markdown"]
        summary = markdown.read_text(encoding="utf-8") if markdown.is_file() else None
        sha = ((payload.get("pull_request") or {}).get("head") or {}).get("sha") or os.environ.get("GITHUB_SHA", "")
        links = [f"[run {os.environ.get('GITHUB_RUN_ID', '')}]({run_url(os.environ.get('GITHUB_RUN_ID', ''))}) on {sha[:7]}"]
        if wired("artifact-url"):
            links.append(f"[HTML report and scored table]({wired('artifact-url')}) (artifact `{artifact}`)")
        links.append(f"[baseline: the default branch's run]({wired('baseline-run-url')})" if wired("baseline-run-url")
                     else "no baseline yet: the default branch's first run uploads one")
        head = marker(artifact)
        try:
            done, written = upsert_comment(github(token), int(number), head, comment_body(head, summary, wired("exit-code"), links))
        except GitHubError as exc:
            hint = exc.hint("pull-requests: write, and a pull request from a fork gets a read-only token")
            warn(f"the pull request comment could not be written ({exc}){hint}")
            return 0
        log(f"pull request comment {done}: {written.get('html_url', '')}")
        set_outputs({"comment-url": written.get("html_url", "")})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["prepare", "score", "comment"])
    return {"prepare": prepare, "score": score, "comment": comment}[parser.parse_args(argv).step]()


if __name__ == "__main__":
    sys.exit(main())
