"""The GitHub Action (issue 47): ``action.yml`` run step by step as a runner runs it, its logic in
``scripts/ci_action.py``, against ragjudge's fake judge and a fake GitHub REST API on loopback
(``tests/fake_github.py``): the one pull request comment, the default branch's last scored table
as the baseline, the response cache's key, and the exit code the job ends with.

``ActionRunner`` plays the runner: each ``run:`` step of ``action.yml`` runs in bash with the
environment its ``env:`` gives (``${{ inputs.* }}``, ``${{ steps.*.outputs.* }}`` and
``${{ github.token }}`` filled in) and the variables GitHub Actions sets (``GITHUB_OUTPUT`` read
back as the step's outputs); the steps that ``uses:`` an action are played by what that action
does here: ``actions/cache/restore`` (the key exactly, else the newest cache that the key, then
each restore key, is a prefix of) and ``actions/cache/save`` over ``caches`` (a saved key is never
overwritten), ``actions/upload-artifact`` as an artifact of the run's branch on the fake API. A
step's ``if:`` is played for the forms ``action.yml`` uses (``always()``, ``success()``,
``steps.S.outcome`` and ``steps.S.outputs.O`` compared with ``==`` or ``!=`` to a quoted text,
joined by ``&&``); a skipped step writes no output. Not played: ``setup-python`` and the install
step (this environment's Python already has ragjudge)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, write_jsonl
from fake_github import LOGIN_PAGE, FakeGitHub

pytestmark = pytest.mark.integration  # the Action's steps as processes against GitHub's fake on loopback

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
SCRIPT = ROOT / "scripts" / "ci_action.py"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load_script():
    spec = importlib.util.spec_from_file_location("ci_action", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows(n: int, bad: set[int] = frozenset()) -> list[dict]:
    """n rows whose context holds the expected response; the ``bad`` ones' expected response is
    absent from it (they fail sufficiency)."""
    return [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."],
             "expected_response": f"city {i}" if i not in bad else f"a village far from {1000 + i}"} for i in range(n)]


@dataclass
class ActionRun:
    code: int
    log: str
    outputs: dict[str, dict[str, str]]
    action_outputs: dict[str, str]
    missing: set[str] = field(default_factory=set)  # steps.S.outputs.O read after S ran without writing O
    skipped: list[str] = field(default_factory=list)  # the steps whose if: was false


class ActionRunner:
    """Runs ``action.yml`` for one repository: ``github`` the fake API, ``judge_url`` the fake
    judge; ``caches`` holds what actions/cache saved, across runs (key -> folder)."""

    def __init__(self, tmp_path: Path, github: FakeGitHub, judge_url: str):
        self.tmp, self.github, self.judge_url = tmp_path, github, judge_url
        self.caches: dict[str, Path] = {}
        self.saved: list[str] = []  # the keys actions/cache/save stored, in order
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.runs = 0

    def run(self, inputs: dict[str, str], event_name: str = "push", pr: int | None = None, branch: str = "main",
            token: str | None = None) -> ActionRun:
        self.runs += 1
        run_id = str(9000 + self.runs)
        job = self.tmp / f"job{self.runs}"
        (job / "temp").mkdir(parents=True)
        payload = {"repository": {"id": self.github.repository_id, "default_branch": self.github.default_branch}}
        if pr is not None:
            payload["pull_request"] = {"number": pr, "head": {"sha": f"{self.runs:x}" * 40, "ref": branch}}
        (job / "event.json").write_text(json.dumps(payload))
        token = self.github.token if token is None else token
        given = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
        given.update(inputs)
        context = {"github.token": token, **{f"inputs.{k}": v for k, v in given.items()}}
        for name, value in list(given.items()):  # an input's default may be an expression
            context[f"inputs.{name}"] = self._fill(value, context, set())
        env = {**os.environ, "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_API_URL": self.github.url,
               "GITHUB_SERVER_URL": "https://github.test", "GITHUB_REPOSITORY": self.github.repo, "GITHUB_RUN_ID": run_id,
               "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(job / "event.json"), "GITHUB_SHA": "f" * 40,
               "GITHUB_REF_NAME": branch, "GITHUB_WORKSPACE": str(self.workspace), "GITHUB_ACTION_PATH": str(ROOT),
               "GITHUB_STEP_SUMMARY": str(job / "step_summary.md"), "RUNNER_OS": "Linux", "RUNNER_TEMP": str(job / "temp"),
               "OPENAI_BASE_URL": self.judge_url, "PYTHONPATH": str(ROOT)}
        env.pop("GITHUB_TOKEN", None)
        outputs: dict[str, dict[str, str]] = {}
        missing: set[str] = set()
        outcomes: dict[str, str] = {}
        skipped: list[str] = []
        log, code = [], None
        for index, step in enumerate(ACTION["runs"]["steps"]):
            ident = step.get("id", f"step{index}")

            def fill(value: object) -> str:
                known = {**context, **{f"steps.{s}.outputs.{k}": v for s, o in outputs.items() for k, v in o.items()}}
                return self._fill(str(value), known, missing, ran=outputs)

            uses = step.get("uses", "")
            if "if" in step and not self._condition(str(step["if"]), {**context, **{
                    f"steps.{s}.outputs.{k}": v for s, o in outputs.items() for k, v in o.items()}, **outcomes}):
                skipped.append(ident)
                continue
            with_ = {k: fill(v) for k, v in (step.get("with") or {}).items()}
            if uses.startswith("actions/setup-python@"):
                outputs[ident] = {"python-path": sys.executable}
            elif ident == "install":
                outputs[ident] = {"python": sys.executable}
            elif uses.startswith("actions/cache/restore@"):
                outputs[ident] = self._restore(with_)
            elif uses.startswith("actions/cache/save@"):
                assert with_["key"], "actions/cache/save needs a key"
                if with_["key"] not in self.caches and Path(with_["path"]).exists():
                    self.caches[with_["key"]] = Path(shutil.copytree(with_["path"], self.tmp / "caches" / f"{len(self.caches)}"))
                    self.saved.append(with_["key"])
                outputs[ident] = {}
            elif uses.startswith("actions/upload-artifact@"):
                folder = Path(with_["path"])
                files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
                artifact = self.github.add_artifact(with_["name"], files, head_branch=branch, run_id=int(run_id))
                outputs[ident] = {"artifact-id": str(artifact["id"]),
                                  "artifact-url": f"https://github.test/{self.github.repo}/actions/runs/{run_id}/artifacts/{artifact['id']}"}
            elif "run" in step:
                output_file = job / f"output-{ident}"
                output_file.touch()
                step_env = {**env, "GITHUB_OUTPUT": str(output_file), **{k: fill(v) for k, v in (step.get("env") or {}).items()}}
                done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=self.workspace, env=step_env, capture_output=True,
                                      text=True, timeout=300)
                log.append(done.stdout + done.stderr)
                outputs[ident] = _read_outputs(output_file.read_text())
                if done.returncode != 0:
                    code = done.returncode
                    break
            else:
                raise AssertionError(f"action.yml step {ident} uses {uses}, which this runner does not play")
            outcomes[f"steps.{ident}.outcome"] = "success"
        else:
            code = 0
        context.update({f"steps.{s}.outputs.{k}": v for s, o in outputs.items() for k, v in o.items()})
        action_outputs = {name: self._fill(spec["value"], context, set()) for name, spec in ACTION["outputs"].items()}
        return ActionRun(code, "\n".join(log), outputs, action_outputs, missing, skipped)

    @staticmethod
    def _condition(condition: str, known: dict[str, str]) -> bool:
        """An ``if:`` of the forms action.yml uses (a bare expression or one in ``${{ }}``)."""
        condition = EXPRESSION.sub(lambda m: m.group(1), condition).strip()
        result = True
        for term in (t.strip() for t in condition.split("&&")):
            if term in ("always()", "success()"):
                continue
            match = re.fullmatch(r"(steps\.[\w-]+\.(?:outcome|outputs\.[\w-]+))\s*(==|!=)\s*'([^']*)'", term)
            assert match, f"action.yml: an if: this runner cannot read: {condition}"
            value = known.get(match.group(1), "")
            result = result and ((value == match.group(3)) == (match.group(2) == "=="))
        return result

    def _fill(self, text: str, context: dict[str, str], missing: set[str], ran: dict | None = None) -> str:
        def value(match: re.Match) -> str:
            expression = match.group(1)
            alternatives = [part.strip() for part in expression.split("||")]
            for part in alternatives:
                if part.startswith("'") and part.endswith("'"):
                    return part[1:-1]
                assert re.fullmatch(r"(inputs|steps|github)\.[\w.-]+", part), f"action.yml: an expression this runner cannot read: {expression}"
                if part.startswith("steps.") and ran is not None:
                    step = part.split(".")[1]
                    if step in ran and part not in context:
                        missing.add(part)
                if context.get(part):
                    return context[part]
            return ""

        return EXPRESSION.sub(value, text)

    def _restore(self, with_: dict[str, str]) -> dict[str, str]:
        # as actions/cache: the key exactly, then the key as a prefix, then each restore key as one
        prefixes = [with_["key"]] + [line.strip() for line in with_.get("restore-keys", "").splitlines() if line.strip()]
        found, exact = None, False
        if with_["key"] in self.caches:
            found, exact = self.caches[with_["key"]], True
        else:
            for prefix in prefixes:  # the newest cache whose key starts with the first prefix that matches one
                matching = [k for k in self.caches if k.startswith(prefix)]
                if matching:
                    found = self.caches[matching[-1]]
                    break
        if found is not None:
            shutil.copytree(found, with_["path"], dirs_exist_ok=True)
        matched = next((k for k, v in self.caches.items() if v == found), "") if found is not None else ""
        return {"cache-hit": "true" if exact else "false", "cache-primary-key": with_["key"], "cache-matched-key": matched}


def _read_outputs(text: str) -> dict[str, str]:
    """A GITHUB_OUTPUT file's values: ``name=value`` lines and ``name<<DELIMITER`` blocks."""
    out, lines = {}, text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out


@pytest.fixture
def github():
    with FakeGitHub() as fake:
        yield fake


@pytest.fixture
def runner(tmp_path, github, server):
    return ActionRunner(tmp_path, github, server.url)


def bot_comments(github: FakeGitHub, number: int) -> list[dict]:
    return [c for c in github.comments.get(number, []) if c["user"]["type"] == "Bot"]


# -- the story: main, then two pushes to a pull request --------------------------------------------


@pytest.mark.slow  # the action's steps as processes, several runs
def test_main_then_two_pushes_to_a_pull_request_one_comment_a_baseline_a_free_rerun_and_a_failing_regression(runner, github, server):
    github.page_size = 2  # the comments run over pages: ours is found past the first
    for n in range(3):
        github.add_comment(7, f"a reviewer's note {n}")
    write_jsonl(runner.workspace / "eval.jsonl", rows(8))
    inputs = {"table": "eval.jsonl", "metrics": "sufficiency", "min-pass-rate": "sufficiency=0.5", "max-regressions": "0",
              "max-drop": "0.1", "alpha": "0.05"}

    main = runner.run(inputs, "push", branch="main")
    assert main.code == 0, main.log
    assert "ragjudge: no baseline: no artifact 'ragjudge-scored' from the default branch yet" in main.log
    assert "ragjudge: no baseline, so max-regressions, max-drop and alpha are not applied on this run" in main.log
    assert "ragjudge: no pull request comment: not a pull request (event push)" in main.log
    assert github.requests("POST") == [] and github.requests("PATCH") == []
    assert [a["name"] for a in github.artifacts] == ["ragjudge-scored"]
    assert {"scored.parquet", "report.html", "summary.json", "summary.md", "junit.xml"} <= set(_zip_names(github.artifacts[0]))
    judged = server.calls
    assert judged == 8 and main.action_outputs["exit-code"] == "0"

    first = runner.run(inputs, "pull_request", pr=7, branch="feature")
    assert first.code == 0, first.log
    assert server.calls == judged  # same table, config and model: main's cache of this table, no provider call
    assert first.outputs["cache"]["cache-matched-key"] == main.outputs["score"]["cache-save-key"] == runner.saved[0]
    assert runner.saved[0].startswith(first.outputs["prepare"]["cache-key"] + "-")
    assert "save" in first.skipped and len(runner.saved) == 1  # no new reply: nothing saved again
    assert f"ragjudge: baseline: scored.parquet of https://github.test/{github.repo}/actions/runs/9001" in first.log
    assert "--baseline" in first.log and "--max-regressions 0" in first.log and "--alpha 0.05" in first.log
    [ours] = bot_comments(github, 7)
    assert len(github.comments[7]) == 4 and [c["body"] for c in github.comments[7][:3]] == [f"a reviewer's note {n}" for n in range(3)]
    body = ours["body"]
    assert body.startswith("<!-- ragjudge: ragjudge-scored -->\n## ragjudge: gate passed\n")
    assert "### Against the baseline" in body and "| sufficiency | 1.00 | 1.00 | +0.00 | [+0.00, +0.00] | 0 | 0 | - |" in body
    assert f"[run 9002](https://github.test/{github.repo}/actions/runs/9002)" in body
    assert first.outputs["upload"]["artifact-url"] in body and f"(https://github.test/{github.repo}/actions/runs/9001)" in body
    assert first.action_outputs["comment-url"] == ours["html_url"]
    assert f"pull request comment created: {ours['html_url']}" in first.log

    write_jsonl(runner.workspace / "eval.jsonl", rows(8, bad={2, 4}))  # the second push makes two rows worse
    second = runner.run(inputs, "pull_request", pr=7, branch="feature")
    assert second.code == 1, second.log  # the action ends with ragjudge's exit code: the job fails
    assert second.action_outputs["exit-code"] == "1"
    assert server.calls == judged + 2  # the older cache of the same model and config answered the six unchanged rows
    assert second.outputs["cache"]["cache-matched-key"] == runner.saved[0]  # by the config's prefix: another table's
    assert "save" not in second.skipped and runner.saved[1] == second.outputs["score"]["cache-save-key"]
    assert "ragjudge: response cache: 2 new replies (10 cached); saved as " in second.log
    [again] = bot_comments(github, 7)
    assert again["id"] == ours["id"] and len(github.comments[7]) == 4  # edited, not a second comment
    assert len(github.requests("POST")) == 1 and len(github.requests("PATCH")) == 1
    body = again["body"]
    assert body.startswith("<!-- ragjudge: ragjudge-scored -->\n## ragjudge: gate failed (exit 1)")
    assert "- FAIL sufficiency: 2 regressed row(s) &gt; 0 (passed in the baseline, fail now; 0 improved)" in body
    assert "| sufficiency | 1.00 | 0.75 | -0.25 | [-0.62, +0.00] | 2 | 0 | 0.5 |" in body and "- sufficiency (2): r2, r4" in body
    # a drop of 0.25 on 8 rows is past --max-drop 0.1, but 2 regressions of 8 are no evidence at --alpha 0.05: that gate passes
    assert ("- PASS sufficiency: pass rate dropped 0.25 &gt; 0.10 (1.00 -&gt; 0.75 on 8 rows ok in both, change 95% [-0.62, +0.00]); "
            "McNemar p 0.5 &gt; alpha 0.05: not significant, so the drop passes") in body
    assert f"[run 9003](https://github.test/{github.repo}/actions/runs/9003)" in body and "run 9002" not in body
    # the baseline stays the default branch's run, never the pull request's own artifacts
    assert f"scored.parquet of https://github.test/{github.repo}/actions/runs/9001" in second.log
    for call in github.calls:
        assert call.headers.get("x-github-api-version") == "2022-11-28" or call.server == "blob"
    assert [c for c in github.calls if c.server == "blob" and "authorization" in c.headers] == []
    assert not (main.missing & first.missing & second.missing)  # every step output action.yml reads is written


@pytest.mark.slow  # the action's steps as processes, several runs
def test_a_run_whose_judges_failed_for_some_rows_saves_what_it_paid_and_the_next_run_saves_the_rest(runner, server):
    # issue 60 item 8a: the cache was saved under an exact key after a run with exit 3, and never
    # again (a saved key is never overwritten): every later run paid the failed rows again
    write_jsonl(runner.workspace / "eval.jsonl", rows(8))
    inputs = {"table": "eval.jsonl", "metrics": "sufficiency", "args": "--max-retries 0"}
    server.errors.extend([(500, "server_error", "The server had an error.", {})] * 3)  # three calls fail, not retried
    failed = runner.run(inputs)
    assert failed.code == 3 and server.calls == 8, failed.log
    second = runner.run(inputs)
    assert second.code == 0 and server.calls == 8 + 3  # only the three failed rows are paid
    third = runner.run(inputs)
    assert third.code == 0 and server.calls == 11, third.log  # nothing paid again (on the old key: 3 more on every run)
    assert "ragjudge: response cache: 5 new replies (5 cached); saved as " in failed.log
    assert "ragjudge: response cache: 3 new replies (8 cached); saved as " in second.log
    assert "ragjudge: response cache: no new reply (8 cached); not saved again" in third.log
    assert runner.saved == [failed.outputs["score"]["cache-save-key"], second.outputs["score"]["cache-save-key"]]
    assert second.outputs["cache"]["cache-matched-key"] == runner.saved[0]
    assert third.outputs["cache"]["cache-matched-key"] == runner.saved[1] and "save" in third.skipped


@pytest.mark.slow  # the action's steps as processes, several runs
def test_a_glob_table_that_grew_saves_the_new_rows_replies_once(runner, server):
    # issue 60 item 8b: a glob (as a trace source) was keyed by its text, so the rows of a file added
    # after the first run were paid on every run
    (runner.workspace / "evals").mkdir()
    write_jsonl(runner.workspace / "evals" / "a.jsonl", rows(4))
    inputs = {"table": "evals/*.jsonl", "metrics": "sufficiency"}
    assert runner.run(inputs).code == 0 and server.calls == 4
    more = [{**row, "id": f"b{i}", "request": f"Which city has tower {i}?"} for i, row in enumerate(rows(3))]
    write_jsonl(runner.workspace / "evals" / "b.jsonl", more)
    grown = runner.run(inputs)
    assert grown.code == 0 and server.calls == 4 + 3, grown.log
    again = runner.run(inputs)
    assert again.code == 0 and server.calls == 7, again.log  # on the old key: 3 more on every run
    assert len(runner.saved) == 2
    assert again.outputs["cache"]["cache-matched-key"] == runner.saved[1] and "save" in again.skipped


def test_the_save_key_follows_the_caches_content_and_is_empty_without_a_new_reply(tmp_path):
    script = load_script()
    assert script.save_key({"a", "b"}, {"a", "b"}, "K") == ""  # every reply from the cache
    assert script.save_key(set(), set(), "K") == ""  # every call failed: nothing to keep
    assert script.save_key(set(), {"a"}, "") == ""  # outside the action: no key to save under
    key = script.save_key({"a"}, {"a", "b"}, "K")
    assert key == "K-" + script.cache_fingerprint({"b", "a"}) and key != script.save_key({"a"}, {"a", "c"}, "K")
    assert script.save_key({"b"}, {"a", "b"}, "K") == key  # the same replies, the same key
    # a damaged cache is taken as empty, so the score step still hands on ragjudge's exit code
    damaged = tmp_path / "damaged" / "responses"
    damaged.mkdir(parents=True)
    (damaged / "cache.db").write_bytes(b"not a database" * 100)
    assert script.cache_entries(str(tmp_path / "damaged")) == set() and script.cache_entries(str(tmp_path / "nowhere")) == set()
    # a glob's key follows the files it matches, not only its text
    (tmp_path / "t").mkdir()
    write_jsonl(tmp_path / "t" / "a.jsonl", rows(2))
    pattern = str(tmp_path / "t" / "*.jsonl")
    before = script.digest(pattern)
    write_jsonl(tmp_path / "t" / "b.jsonl", rows(1))
    assert script.digest(pattern) != before and script.digest("mlflow:evals") == script.digest("mlflow:evals")


def _zip_names(artifact: dict) -> list[str]:
    import io
    import zipfile

    return zipfile.ZipFile(io.BytesIO(artifact["_zip"])).namelist()


# -- no token, no pull request, a read-only token ------------------------------------------------------


@pytest.mark.slow  # the action's steps as processes, several runs
def test_without_a_token_or_with_comment_false_there_is_no_comment_and_the_log_says_why(runner, github):
    write_jsonl(runner.workspace / "eval.jsonl", rows(4, bad={1}))
    inputs = {"table": "eval.jsonl", "metrics": "sufficiency"}
    done = runner.run(inputs, "pull_request", pr=3, branch="feature", token="")
    assert done.code == 1  # the gate (pass rate 0.75 < 1.0) still decides
    assert "ragjudge: no pull request comment: no token (the input github-token is empty)" in done.log
    assert "ragjudge: no baseline: no token" in done.log
    assert github.calls == [] and github.comments == {}
    # not a pull request (a push): the story above
    off = runner.run({**inputs, "comment": "false"}, "pull_request", pr=3, branch="feature")
    assert "ragjudge: no pull request comment: the input comment is false" in off.log and github.comments == {}


@pytest.mark.slow  # the action's steps as processes, several runs
def test_a_read_only_token_warns_and_the_job_ends_with_the_gates_code(runner, github):
    # a pull request from a fork gets a token that cannot write
    github.read_only = True
    write_jsonl(runner.workspace / "eval.jsonl", rows(4))
    done = runner.run({"table": "eval.jsonl", "metrics": "sufficiency"}, "pull_request", pr=5, branch="feature")
    assert done.code == 0, done.log
    assert ("::warning::ragjudge: the pull request comment could not be written "
            f"(POST /repos/{github.repo}/issues/5/comments: 403 Resource not accessible by integration)") in done.log
    assert github.comments == {}


@pytest.mark.slow  # the action's steps as processes
def test_the_comment_and_the_job_summary_ping_no_one_and_link_nowhere_from_the_data(runner, github):
    # issue 60 item 9 (esphome/devices.esphome.io#1649): failing rows' ids went into the comment as
    # live @mentions, autolinks and issue references
    table = rows(4, bad={1, 2})
    table[1]["id"], table[2]["id"] = "@octocat", "see https://evil.example/x [here](http://evil.example) #7"
    write_jsonl(runner.workspace / "eval.jsonl", table)
    done = runner.run({"table": "eval.jsonl", "metrics": "sufficiency"}, "pull_request", pr=11, branch="feature")
    assert done.code == 1, done.log
    [ours] = bot_comments(github, 11)
    summary = (runner.tmp / "job1" / "step_summary.md").read_text(encoding="utf-8")
    for text in (ours["body"], summary):
        assert "| sufficiency | @&#8203;octocat | 0 |" in text
        assert "| sufficiency | see https:&#8203;//evil.example/x [here]\\(http:&#8203;//evil.example) #&#8203;7 | 0 |" in text
        assert [live for live in ("@octocat", "https://evil", "](http://evil", "#7") if live in text] == []
    assert f"[run 9001](https://github.test/{github.repo}/actions/runs/9001)" in ours["body"]  # the comment's own links stay links


def test_a_bad_input_ends_the_job_with_exit_2_and_the_comment_says_so(runner, github):
    done = runner.run({"table": "missing.jsonl"}, "pull_request", pr=9, branch="feature")
    assert done.code == 2
    [ours] = bot_comments(github, 9)
    assert ours["body"].startswith("<!-- ragjudge: ragjudge-scored -->\n## ragjudge: exit 2 (bad input, config or usage)")
    assert done.outputs["score"]["scored"] == ""


# -- GitHub's API not reached, or answering what it should not: warnings, never a failed step -------------


def _helper_env(monkeypatch, tmp_path: Path, api_url: str, repo: str, token: str) -> Path:
    """The environment the prepare and comment steps get on a pull request (number 12), the
    API at ``api_url``; returns the GITHUB_OUTPUT file."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 12, "head": {"sha": "a" * 40}},
                                 "repository": {"id": 101, "default_branch": "main"}}))
    output = tmp_path / "output"
    output.write_text("")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "summary.md").write_text("## ragjudge: gate passed\n")
    for name, value in {"GITHUB_API_URL": api_url, "GITHUB_REPOSITORY": repo, "GITHUB_TOKEN": token, "GITHUB_EVENT_NAME": "pull_request",
                        "GITHUB_EVENT_PATH": str(event), "GITHUB_OUTPUT": str(output), "GITHUB_RUN_ID": "77", "RUNNER_OS": "Linux",
                        "RUNNER_TEMP": str(tmp_path), "INPUT_TABLE": "eval.jsonl", "INPUT_MODEL": "openai/fake-judge",
                        "STEP_DIR": str(tmp_path / "out"), "STEP_EXIT_CODE": "0"}.items():
        monkeypatch.setenv(name, value)
    return output


ANSWERED = "; not a missing permission (GitHub or a proxy in between answered so)"


@pytest.mark.parametrize("answer, said", [
    # a proxy's sign-in page, with 200 (issue 60 item 10): JSONDecodeError before
    ((200, "text/html; charset=utf-8", LOGIN_PAGE),
     "200 answered text/html, not JSON (a proxy's or a login page?): '<!DOCTYPE html> <html><head><title>Sign in - Corporate Proxy</title></head><body'"),
    # JSON, but not GitHub's shape: KeyError and TypeError before
    ((200, "application/json", '{"status": "ok"}'), "200 answered JSON that is not a list of {}"),
    # a gateway's error page: no permission explains it
    ((502, "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>"), "502 <html><body><h1>502 Bad Gateway</h1></body></html>"),
])
def test_an_api_answer_that_is_not_githubs_is_a_warning_in_prepare_and_comment(github, tmp_path, monkeypatch, capsys, answer, said):
    script = load_script()
    output = _helper_env(monkeypatch, tmp_path, github.url, github.repo, github.token)
    github.answer_all = answer
    assert script.main(["prepare"]) == 0
    assert script.main(["comment"]) == 0
    log = capsys.readouterr().out
    outputs = _read_outputs(output.read_text())
    assert outputs["baseline"] == "" and outputs["cache-key"] and "comment-url" not in outputs
    assert (f"::warning::ragjudge: no baseline: reading the default branch's artifact 'ragjudge-scored' failed "
            f"(GET /repos/{github.repo}/actions/artifacts: {said.format('artifacts')}){ANSWERED}. The run goes on without a comparison\n") in log
    assert (f"::warning::ragjudge: the pull request comment could not be written (GET /repos/{github.repo}/issues/12/comments: "
            f"{said.format('items')}){ANSWERED}\n") in log
    assert "permissions:" not in log and "Traceback" not in log


def test_a_refused_connection_is_a_warning_that_names_no_permission(tmp_path, monkeypatch, capsys):
    # issue 60 item 10: a refused connection was reported as a missing permission
    import socket

    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    _helper_env(monkeypatch, tmp_path, f"http://127.0.0.1:{port}", "octo/rag", "ghs-test-token-0000")
    script = load_script()
    assert script.main(["prepare"]) == 0 and script.main(["comment"]) == 0
    log = capsys.readouterr().out
    not_reached = "; GitHub's API was not reached (GITHUB_API_URL, a proxy or the network), not a missing permission"
    assert (f"::warning::ragjudge: no baseline: reading the default branch's artifact 'ragjudge-scored' failed (GET "
            f"http://127.0.0.1:{port}/repos/octo/rag/actions/artifacts: no answer (ConnectError: ") in log
    assert (f"::warning::ragjudge: the pull request comment could not be written (GET http://127.0.0.1:{port}/repos/octo/rag/issues/12/"
            "comments: no answer (ConnectError: ") in log
    assert log.count(not_reached) == 2 and "permissions:" not in log


# -- the baseline: the default branch's newest scored table ---------------------------------------------


def test_the_baseline_is_the_default_branchs_newest_artifact_fetched_without_the_token(github, tmp_path, monkeypatch):
    script = load_script()
    monkeypatch.setenv("GITHUB_RUN_ID", "4242")
    table = {"scored.parquet": b"main-newer"}
    github.add_artifact("ragjudge-scored", {"scored.parquet": b"main-older"}, "main")
    github.add_artifact("ragjudge-scored", table, "main", run_id=77)
    github.add_artifact("ragjudge-other", {"scored.parquet": b"another name"}, "main")
    github.add_artifact("ragjudge-scored", {"scored.parquet": b"a pull request"}, "feature")
    github.add_artifact("ragjudge-scored", {"scored.parquet": b"a fork's main"}, "main", head_repository_id=999)
    github.add_artifact("ragjudge-scored", {"scored.parquet": b"expired"}, "main", expired=True)
    github.add_artifact("ragjudge-scored", {"scored.parquet": b"this run"}, "main", run_id=4242)
    github.page_size = 2
    api = script.GitHub(github.url, github.repo, github.token)
    payload = {"repository": {"id": github.repository_id, "default_branch": "main"}}
    path, source = script.fetch_baseline(api, "ragjudge-scored", payload, tmp_path / "baseline")
    assert path.read_bytes() == b"main-newer" and source.endswith("/actions/runs/77")
    [download] = github.requests(server="blob")
    assert "authorization" not in download.headers  # the signed URL's origin never sees the token
    # no default branch in the payload: it is asked of the API
    assert script.find_baseline(api, "ragjudge-scored", {})["workflow_run"]["id"] == 77
    assert script.find_baseline(api, "no-such-artifact", payload) is None


# -- the response cache's key ------------------------------------------------------------------------------------


def test_the_cache_key_is_stable_and_changes_with_the_config_the_model_and_the_table(tmp_path):
    script = load_script()
    table = write_jsonl(tmp_path / "eval.jsonl", rows(4))
    config = tmp_path / "ragjudge.yaml"
    config.write_text("judge:\n  model: openai/gpt-4o-mini\n")
    key, restore = script.cache_key(table, str(config), "", "Linux")
    assert (key, restore) == script.cache_key(table, str(config), "", "Linux")  # same inputs, same key, run after run
    assert restore[0] == key + "-" and key.startswith(restore[1]) and restore[1].startswith(restore[2])
    assert restore[2] == "ragjudge-v1-Linux-openai_gpt-4o-mini-"
    assert script.cache_key(table, str(config), "openai/gpt-4o-mini", "Linux") == (key, restore)  # the model the config names
    config.write_text("judge:\n  model: openai/gpt-4o-mini\n  temperature: 0.5\n")
    changed, changed_restore = script.cache_key(table, str(config), "", "Linux")
    assert changed != key and changed_restore[1] != restore[1] and changed_restore[2] == restore[2]
    other_model, _ = script.cache_key(table, str(config), "anthropic/claude-sonnet-4-5", "Linux")
    assert "anthropic_claude-sonnet-4-5" in other_model and other_model != changed
    write_jsonl(tmp_path / "eval.jsonl", rows(5))
    new_table, new_restore = script.cache_key(table, str(config), "", "Linux")
    assert new_table != changed and new_restore[1:] == changed_restore[1:]  # a changed table restores the same config's cache
    assert script.cache_key(table, "", "", "Linux")[0].split("-")[-2] == "none"


def test_the_prepare_step_writes_the_key_it_computes(tmp_path, monkeypatch):
    table = write_jsonl(tmp_path / "eval.jsonl", rows(2))
    output = tmp_path / "out"
    env = {**os.environ, "INPUT_TABLE": table, "INPUT_MODEL": "openai/fake-judge", "INPUT_BASELINE": "false", "RUNNER_OS": "Linux",
           "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(output), "PYTHONPATH": str(ROOT)}
    keys = []
    for _ in range(2):
        output.write_text("")
        done = subprocess.run([sys.executable, str(SCRIPT), "prepare"], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        keys.append(_read_outputs(output.read_text()))
    assert keys[0] == keys[1] and keys[0]["cache-key"] == load_script().cache_key(table, "", "openai/fake-judge", "Linux")[0]
    assert keys[0]["cache-restore-keys"].splitlines() == load_script().cache_key(table, "", "openai/fake-judge", "Linux")[1]
    assert keys[0]["cache-dir"] == str(tmp_path / "ragjudge-cache") and keys[0]["baseline"] == ""
    assert "ragjudge: no baseline: the input baseline is false" in done.stdout


# -- action.yml's wiring ------------------------------------------------------------------------------------------------


def test_action_yml_reads_only_declared_inputs_and_earlier_steps_and_sets_what_the_script_reads():
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    declared = set(ACTION["inputs"])
    used = set(re.findall(r"inputs\.([\w-]+)", text))
    assert used == declared  # each input is wired, and nothing reads an undeclared one
    steps = ACTION["runs"]["steps"]
    seen: list[str] = []
    for step in steps:
        for referenced in re.findall(r"steps\.([\w-]+)\.", json.dumps(step)):
            assert referenced in seen, f"step {step.get('id')} reads step {referenced}, which has not run before it"
        if "run" in step:
            assert step.get("shell") == "bash" and not EXPRESSION.search(step["run"]), "a run: line takes inputs through env: only"
            for name, value in (step.get("env") or {}).items():
                if name.startswith("INPUT_"):
                    assert value == "${{ inputs.%s }}" % name[6:].lower().replace("_", "-"), name
                if name.startswith("STEP_"):
                    assert re.fullmatch(r"\$\{\{ steps\.[\w-]+\.outputs\.%s \}\}" % name[5:].lower().replace("_", "-"), value), name
        seen.append(step.get("id", ""))
    source = SCRIPT.read_text(encoding="utf-8")
    for subcommand in ("prepare", "score", "comment"):
        [step] = [s for s in steps if f"ci_action.py\" {subcommand}" in s.get("run", "")]
        body = re.search(rf"\n# -- {subcommand}.*?(?=\n# -- |\ndef main)", source, re.S).group(0)  # the subcommand's section
        reads = {f"INPUT_{n.upper().replace('-', '_')}" for n in re.findall(r'(?:given|flag)\("([\w-]+)"', body)}
        reads |= {f"STEP_{n.upper().replace('-', '_')}" for n in re.findall(r'wired\("([\w-]+)"\)', body)}
        reads -= {"INPUT_OUTPUT_DIR"}  # optional, for a run outside the action
        assert reads <= set(step["env"]), (subcommand, reads - set(step["env"]))
    assert all(re.fullmatch(r"actions/[\w/-]+@v\d+", s["uses"]) for s in steps if "uses" in s)


def test_the_docs_use_the_action_with_its_own_inputs():
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    uses = []
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        document = yaml.safe_load(block)
        steps = document if isinstance(document, list) else [s for job in (document.get("jobs") or {}).values() for s in job["steps"]]
        uses += [step for step in steps if str(step.get("uses", "")).startswith("YOUR-ORG/ragjudge@")]
    assert len(uses) == 2  # the page's lead and the whole workflow
    required = {name for name, spec in ACTION["inputs"].items() if spec.get("required")}
    for step in uses:
        assert required <= set(step["with"]) <= set(ACTION["inputs"]), step["with"]
    table = text.split("## The GitHub Action", 1)[1].split("### Without the Action", 1)[0]
    assert set(re.findall(r"^\| `([\w-]+)`", table, re.M)) | {n for pair in re.findall(r"^\| `([\w-]+)`, `([\w-]+)`", table, re.M) for n in pair} == set(ACTION["inputs"])
