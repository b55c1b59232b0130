"""A fake of GitHub's REST API on loopback, for the GitHub Action's tests (tests/test_github_action.py):
the endpoints ``scripts/ci_action.py`` calls, with GitHub's shapes, and nothing more.

- ``GET /repos/{owner}/{repo}/issues/{number}/comments`` (``per_page``, ``page``; a ``Link`` header
  with ``rel="next"`` while more pages follow), ``POST`` there to create a comment, and
  ``PATCH /repos/{owner}/{repo}/issues/comments/{id}`` to edit one;
- ``GET /repos/{owner}/{repo}/actions/artifacts`` (``name``, ``per_page``, ``page``; newest first)
  and ``GET .../actions/artifacts/{id}/zip``, which answers 302 to a signed URL on a second
  loopback server (another origin, as GitHub's blob storage is): that one refuses a request that
  carries an ``Authorization`` header, as a signed URL takes no other credentials;
- ``GET /repos/{owner}/{repo}`` (``default_branch``, ``id``).

Every request needs ``Authorization: Bearer TOKEN`` (or ``token TOKEN``), else 401 "Bad
credentials"; ``read_only = True`` answers writes with 403 "Resource not accessible by
integration", as the token of a pull request from a fork does. ``answer_all = (status,
content_type, body)`` answers every API request so, as a proxy or a captive portal in between
does (``LOGIN_PAGE``: its HTML sign-in page, with 200). ``calls`` records every request (method, path, query, headers, JSON body) to both servers."""

from __future__ import annotations

import io
import json
import threading
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

BOT = {"login": "github-actions[bot]", "type": "Bot"}
LOGIN_PAGE = "<!DOCTYPE html>\n<html><head><title>Sign in - Corporate Proxy</title></head><body><form>...</form></body></html>\n"


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: object = None
    server: str = "api"


@dataclass
class FakeGitHub:
    """The fake API for one repository ``repo`` (id ``repository_id``, default branch
    ``default_branch``), reached with ``token``. ``page_size`` caps every page below what a
    request asks (so a test can make the comments run over pages). Start it with ``with``."""

    repo: str = "octo/rag"
    token: str = "ghs-test-token-0000"
    repository_id: int = 101
    default_branch: str = "main"
    page_size: int = 100
    read_only: bool = False
    answer_all: tuple[int, str, str] | None = None
    comments: dict[int, list[dict]] = field(default_factory=dict)
    artifacts: list[dict] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    _next_id: int = 1000

    def __enter__(self) -> "FakeGitHub":
        self._lock = threading.Lock()
        self._api = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self, "api"))
        self._blobs = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self, "blob"))
        for server in (self._api, self._blobs):
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        for server in (self._api, self._blobs):
            server.shutdown()
            server.server_close()

    @property
    def url(self) -> str:
        """The API's base URL, as GITHUB_API_URL gives it (no trailing slash)."""
        return f"http://127.0.0.1:{self._api.server_address[1]}"

    @property
    def blob_url(self) -> str:
        return f"http://127.0.0.1:{self._blobs.server_address[1]}"

    def new_id(self) -> int:
        with self._lock:
            self._next_id += 1
            return self._next_id

    def add_comment(self, number: int, body: str, user: dict | None = None) -> dict:
        """A comment already on pull request ``number`` (by a person unless ``user`` says)."""
        ident = self.new_id()
        comment = {"id": ident, "body": body, "user": user or {"login": "octocat", "type": "User"},
                   "html_url": f"https://github.test/{self.repo}/pull/{number}#issuecomment-{ident}"}
        self.comments.setdefault(number, []).append(comment)
        return comment

    def add_artifact(self, name: str, files: dict[str, bytes], head_branch: str, run_id: int | None = None,
                     head_repository_id: int | None = None, expired: bool = False) -> dict:
        """An artifact of a workflow run on ``head_branch`` holding ``files`` (zipped as upload-artifact
        does); newer than every artifact added before it."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for path, data in files.items():
                archive.writestr(path, data)
        ident = self.new_id()
        artifact = {
            "id": ident, "name": name, "size_in_bytes": len(buffer.getvalue()), "expired": expired,
            "created_at": f"2026-12-01T00:00:{len(self.artifacts):02d}Z",
            "archive_download_url": f"{self.url}/repos/{self.repo}/actions/artifacts/{ident}/zip",
            "workflow_run": {"id": run_id or ident + 5000, "repository_id": self.repository_id,
                             "head_repository_id": self.repository_id if head_repository_id is None else head_repository_id,
                             "head_branch": head_branch, "head_sha": "0" * 40},
            "_zip": buffer.getvalue(),
        }
        self.artifacts.append(artifact)
        return artifact

    def requests(self, method: str | None = None, server: str = "api") -> list[Call]:
        return [c for c in self.calls if c.server == server and (method is None or c.method == method)]


def _handler(fake: FakeGitHub, server: str):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, status: int, payload: object = None, headers: dict[str, str] | None = None, raw: bytes | None = None) -> None:
            body = raw if raw is not None else (b"" if payload is None else json.dumps(payload).encode())
            self.send_response(status)
            self.send_header("Content-Type", "application/zip" if raw is not None else "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _handle(self, method: str) -> None:
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            with fake._lock:
                fake.calls.append(Call(method, parts.path, query, {k.lower(): v for k, v in self.headers.items()}, body, server))
            if server == "blob":
                return self._blob(parts.path)
            if fake.answer_all:
                status, content_type, text = fake.answer_all
                page = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                return
            auth = self.headers.get("Authorization", "")
            if auth not in (f"Bearer {fake.token}", f"token {fake.token}"):
                return self._send(401, {"message": "Bad credentials"})
            prefix = f"/repos/{fake.repo}"
            if not (parts.path == prefix or parts.path.startswith(prefix + "/")):
                return self._send(404, {"message": "Not Found"})
            route = parts.path[len(prefix):].strip("/").split("/")
            if method in ("POST", "PATCH") and fake.read_only:
                return self._send(403, {"message": "Resource not accessible by integration"})
            if route == [""] and method == "GET":
                return self._send(200, {"id": fake.repository_id, "full_name": fake.repo, "default_branch": fake.default_branch})
            if len(route) == 3 and route[0] == "issues" and route[2] == "comments" and route[1].isdigit():
                number = int(route[1])
                if method == "GET":
                    return self._page(fake.comments.get(number, []), query, parts.path)
                if method == "POST":
                    comment = {"id": fake.new_id(), "body": body["body"], "user": dict(BOT)}
                    comment["html_url"] = f"https://github.test/{fake.repo}/pull/{number}#issuecomment-{comment['id']}"
                    fake.comments.setdefault(number, []).append(comment)
                    return self._send(201, comment)
            if len(route) == 3 and route[:2] == ["issues", "comments"] and method == "PATCH":
                for comment in (c for thread in fake.comments.values() for c in thread):
                    if str(comment["id"]) == route[2]:
                        comment["body"] = body["body"]
                        return self._send(200, comment)
                return self._send(404, {"message": "Not Found"})
            if route == ["actions", "artifacts"] and method == "GET":
                found = [a for a in reversed(fake.artifacts) if a["name"] == query.get("name", a["name"])]
                return self._page(found, query, parts.path, key="artifacts")
            if len(route) == 4 and route[:2] == ["actions", "artifacts"] and route[3] == "zip" and method == "GET":
                for artifact in fake.artifacts:
                    if str(artifact["id"]) == route[2]:
                        if artifact["expired"]:
                            return self._send(410, {"message": "Artifact has expired"})
                        return self._send(302, headers={"Location": f"{fake.blob_url}/blob/{artifact['id']}?sig=signed"})
            return self._send(404, {"message": "Not Found"})

        def _page(self, items: list[dict], query: dict[str, str], path: str, key: str | None = None) -> None:
            size = min(int(query.get("per_page", 30)), 100, fake.page_size)
            page = int(query.get("page", 1))
            chunk = [{k: v for k, v in item.items() if not k.startswith("_")} for item in items[(page - 1) * size:page * size]]
            headers = {}
            if page * size < len(items):
                headers["Link"] = f'<{fake.url}{path}?{urlencode({**query, "page": page + 1})}>; rel="next"'
            return self._send(200, {"total_count": len(items), key: chunk} if key else chunk, headers)

        def _blob(self, path: str) -> None:
            if self.headers.get("Authorization"):
                return self._send(400, {"message": "the signed URL takes no Authorization header"})
            for artifact in fake.artifacts:
                if path == f"/blob/{artifact['id']}":
                    return self._send(200, raw=artifact["_zip"])
            return self._send(404, {"message": "Not Found"})

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_PATCH(self) -> None:
            self._handle("PATCH")

    return Handler
