"""Scoring on Ray (issue 14): a local cluster (ray.init(num_cpus=2)) against the fake server."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from conftest import SAMPLE, read_jsonl, write_jsonl
from helpers import two_files

ray = pytest.importorskip("ray", reason='needs the [ray] extra: pip install ".[ray]"')
pytestmark = pytest.mark.slow  # a local Ray cluster (~100 s for the module on 2 cores)


@pytest.fixture(scope="module", autouse=True)
def cluster():
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture
def ray_cluster():
    """The module's cluster (``cluster`` above), for a test that names it."""
    return ray


def rows(n: int) -> list[dict]:
    return [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."],
             "expected_response": f"city {i}" if i % 3 else f"a village far from {i}"} for i in range(n)]


def _without_timing(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in ("mapping",)}


def test_ray_gives_the_verdicts_and_summary_of_a_local_run(run_cli, tmp_path):
    source = str(SAMPLE / "rag_eval.jsonl")
    local_out, ray_out = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    local_summary, ray_summary = tmp_path / "local.json", tmp_path / "ray.json"
    local = run_cli(["score", source, "-o", str(local_out), "--summary-json", str(local_summary), "--no-cache"])
    on_ray = run_cli(["score", source, "-o", str(ray_out), "--summary-json", str(ray_summary), "--no-cache", "--engine", "ray",
                      "--ray-actors", "2"])
    assert local.code == on_ray.code == 1
    fields = ["id", "sufficiency_status", "sufficiency_score", "sufficiency_missing", "completeness_status", "completeness_score"]
    assert [[r[f] for f in fields] for r in read_jsonl(ray_out)] == [[r[f] for f in fields] for r in read_jsonl(local_out)]
    assert _without_timing(json.loads(ray_summary.read_text())) == _without_timing(json.loads(local_summary.read_text()))


def test_ray_gives_the_per_passage_verdicts_and_the_k_distribution_of_a_local_run(run_cli, tmp_path):
    # issue 63: passage_relevance's and sufficient_k's columns, and the summary's k counts added over Ray's blocks
    source = str(SAMPLE / "rag_eval.jsonl")
    metrics = ["-m", "passage_relevance", "-m", "sufficient_k", "--min-pass-rate", "0", "--no-cache"]
    local_out, ray_out = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    local_summary, ray_summary = tmp_path / "local.json", tmp_path / "ray.json"
    local = run_cli(["score", source, "-o", str(local_out), "--summary-json", str(local_summary), *metrics])
    on_ray = run_cli(["score", source, "-o", str(ray_out), "--summary-json", str(ray_summary), *metrics, "--engine", "ray", "--ray-actors", "2"])
    assert local.code == on_ray.code == 0, on_ray.stderr
    fields = ["id", "passage_relevance_verdicts", "passage_relevance_reciprocal_rank", "sufficient_k_k", "sufficient_k_probes"]
    assert [[r[f] for f in fields] for r in read_jsonl(ray_out)] == [[r[f] for f in fields] for r in read_jsonl(local_out)]
    local_doc, ray_doc = json.loads(local_summary.read_text()), json.loads(ray_summary.read_text())
    assert ray_doc["metrics"]["sufficient_k"]["sufficient_k"] == local_doc["metrics"]["sufficient_k"]["sufficient_k"]
    assert local_doc["metrics"]["sufficient_k"]["sufficient_k"]["rows"] > 0


def test_ray_gives_the_pairwise_verdicts_and_win_rate_of_a_local_run(run_cli, tmp_path):
    # issue 64 item 4: both orders judged in the actors, the pairwise counts added over Ray's blocks
    words = "alpha beta gamma delta epsilon zeta eta theta".split()
    pairs = [{"id": f"p{i}", "request": "Tell me.", "expected_response": "alpha beta gamma delta",
              "response_a": " ".join(words[:1 + i % 5]), "response_b": " ".join(words[:1 + (i * 3) % 7])} for i in range(12)]
    source = write_jsonl(tmp_path / "pairs.jsonl", pairs)
    options = ["--pairwise", "response_a,response_b", "--model", "openai/fake-longer", "--no-cache"]
    local_out, ray_out = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    local_summary, ray_summary = tmp_path / "local.json", tmp_path / "ray.json"
    local = run_cli(["score", source, "-o", str(local_out), "--summary-json", str(local_summary), *options])
    on_ray = run_cli(["score", source, "-o", str(ray_out), "--summary-json", str(ray_summary), *options, "--engine", "ray", "--ray-actors", "2"])
    assert local.code == on_ray.code == 0, on_ray.stderr
    fields = ["id", "pairwise_verdict", "pairwise_inconsistent", "pairwise_order_ab", "pairwise_order_ba", "pairwise_score"]
    assert [[r[f] for f in fields] for r in read_jsonl(ray_out)] == [[r[f] for f in fields] for r in read_jsonl(local_out)]
    local_doc, ray_doc = json.loads(local_summary.read_text()), json.loads(ray_summary.read_text())
    assert ray_doc["metrics"]["pairwise"]["pairwise"] == local_doc["metrics"]["pairwise"]["pairwise"]
    assert local_doc["metrics"]["pairwise"]["pairwise"]["asked_both"] > 0


def test_the_output_folder_has_the_scorers_schema(run_cli, tmp_path):
    import pyarrow as pa
    import pyarrow.dataset as dataset

    from ragjudge import load_config
    from ragjudge.scoring import Scorer

    source = tmp_path / "in.parquet"
    pd.DataFrame(rows(40)).to_parquet(source)
    folder = tmp_path / "scored"
    result = run_cli(["score", str(source), "-o", str(folder), "-m", "sufficiency", "--engine", "ray", "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    written = dataset.dataset(str(folder), format="parquet")
    assert written.count_rows() == 40
    with Scorer(load_config(None, {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge"}, "cache": {"enabled": False}})) as scorer:
        expected = scorer.output_schema(pa.Schema.from_pandas(pd.read_parquet(source), preserve_index=False))
    def plain(schema):  # Parquet names a list's item "element", Arrow "item": the same type
        return [(f.name, str(f.type).replace("<element:", "<item:")) for f in schema]

    assert plain(written.schema) == plain(expected)
    assert sorted(pd.read_parquet(folder)["id"]) == sorted(f"r{i}" for i in range(40))


def test_an_actor_killed_mid_run_still_yields_every_row_once(run_cli, tmp_path, monkeypatch, server):
    marker = tmp_path / "crashed"
    monkeypatch.setenv("RAGJUDGE_TEST_CRASH_ONCE", str(marker))
    out = tmp_path / "out.jsonl"
    config = tmp_path / "c.yaml"
    config.write_text("chunk_size: 10\n")
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(60)), "-c", str(config), "-m", "sufficiency", "-o", str(out),
                      "--engine", "ray", "--ray-actors", "2", "--min-pass-rate", "0", "--summary-json", str(tmp_path / "s.json")])
    assert marker.exists()  # an actor did die, on its second batch
    assert result.code == 0, result.stderr
    written = read_jsonl(out)
    assert [r["id"] for r in written] == [f"r{i}" for i in range(60)]  # every row once, in order
    assert {r["sufficiency_status"] for r in written} == {"ok"}
    assert json.loads((tmp_path / "s.json").read_text())["metrics"]["sufficiency"]["rows"] == 60  # the retried batch counted once


def test_a_401_ends_the_run_with_exit_3_after_few_calls(run_cli, tmp_path, server):
    server.auth_error = True
    config = tmp_path / "c.yaml"
    config.write_text("chunk_size: 5\n")
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(40)), "-c", str(config), "-m", "sufficiency", "--engine", "ray",
                      "--ray-actors", "2"])
    assert result.code == 3
    assert "authentication failed" in result.stderr
    assert server.calls <= 2  # one probe per actor at most, not one per actor per batch


@pytest.mark.parametrize("setup, message", [
    ("empty_folder", "no readable file (.jsonl, .csv, .parquet, .json) in it"),
    ("mixed", "the files are of different formats (csv, jsonl)"),
    ("missing_column", "column 'nope' (for context) not found in"),
])
def test_bad_input_exits_2_with_the_messages_of_a_local_run(run_cli, tmp_path, setup, message):
    folder = tmp_path / "data"
    folder.mkdir()
    args = []
    if setup == "mixed":
        write_jsonl(folder / "a.jsonl", rows(2))
        pd.DataFrame(rows(2)).to_csv(folder / "b.csv", index=False)
    elif setup == "missing_column":
        write_jsonl(folder / "a.jsonl", rows(2))
        args = ["--map", "context=nope"]
        local = run_cli(["score", str(folder / "a.jsonl"), *args])
        assert local.code == 2 and message in local.stderr
    else:
        (folder / "notes.txt").write_text("nothing to score")
    result = run_cli(["score", str(folder), "--engine", "ray", *args])
    assert result.code == 2 and message in result.stderr, result.stderr


def test_score_dataset_for_users_who_hold_a_dataset(server, tmp_path):
    from ragjudge import load_config
    from ragjudge.run.ray import score_dataset

    ds = ray.data.from_pandas(pd.DataFrame(rows(12)))
    config = load_config(None, {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge", "api_base": server.url},
                                "cache": {"dir": str(tmp_path / "c")}})
    scored, summary = score_dataset(ds, config, actors=2)
    frame = scored.to_pandas()
    assert sorted(frame["id"]) == sorted(f"r{i}" for i in range(12))
    assert summary.rows == 12 and summary.metrics["sufficiency"].ok == 12
    assert summary.metrics["sufficiency"].passed == 8  # every third row's expected response is absent


def test_a_ray_run_stores_its_replies_for_the_next_run(run_cli, tmp_path, server):
    """Review fault: Ray's actors never close their Scorer, so with replies written in batches a
    small Ray run stored none; each batch's replies are now stored when it is judged."""
    source = write_jsonl(tmp_path / "in.jsonl", rows(20))
    cache = str(tmp_path / "c")
    common = ["-m", "sufficiency", "--model", "openai/fake-judge", "--api-base", server.url, "--cache-dir", cache,
              "--min-pass-rate", "0", "-q"]
    first = run_cli(["score", source, *common, "--engine", "ray", "--ray-actors", "1"])
    assert first.code == 0, first.stderr
    served = server.calls
    again = run_cli(["score", source, *common, "--summary-json", str(tmp_path / "s.json")])
    assert again.code == 0, again.stderr
    assert served == 20 and server.calls == served  # the local re-run made no call
    assert json.loads((tmp_path / "s.json").read_text())["metrics"]["sufficiency"]["cached"] == 20


# -- issue 43: every option of the request honoured on Ray, or refused before judging ----------------

def _statuses(path):
    return [r["sufficiency_status"] for r in read_jsonl(path)]


def test_ray_judges_the_rows_limit_and_sample_choose_as_a_local_run(run_cli, tmp_path, server):
    # --limit 3 and --sample 2 --seed 1 judged all 8 rows on Ray (16 calls), saying nothing
    source = write_jsonl(tmp_path / "in.jsonl", rows(8))
    common = ["-m", "sufficiency", "--min-pass-rate", "0", "--no-cache", "--ray-actors", "2"]
    limited = run_cli(["score", source, "--engine", "ray", "--limit", "3", "-o", str(tmp_path / "l.jsonl"), *common])
    assert limited.code == 0, limited.stderr
    assert _statuses(tmp_path / "l.jsonl") == ["ok"] * 3 + ["skipped"] * 5 and server.calls == 3
    assert {r["sufficiency_error"] for r in read_jsonl(tmp_path / "l.jsonl")[3:]} == {"not sampled"}
    sampled = run_cli(["score", source, "--engine", "ray", "--sample", "2", "--seed", "1", "-o", str(tmp_path / "s.jsonl"),
                       "--summary-json", str(tmp_path / "s.json"), *common])
    local = run_cli(["score", source, "--sample", "2", "--seed", "1", "-o", str(tmp_path / "local.jsonl"),
                     *[a for a in common if a not in ("--ray-actors", "2")]])
    assert sampled.code == local.code == 0
    assert _statuses(tmp_path / "s.jsonl") == _statuses(tmp_path / "local.jsonl") and _statuses(tmp_path / "s.jsonl").count("ok") == 2
    assert json.loads((tmp_path / "s.json").read_text())["metrics"]["sufficiency"]["not_sampled"] == 6


def test_ray_reads_and_writes_the_formats_the_options_name(run_cli, tmp_path):
    source = tmp_path / "rows.txt"  # a suffix that says nothing: --input-format tells
    source.write_text("".join(json.dumps(r) + "\n" for r in rows(4)))
    out = tmp_path / "scored.out"
    result = run_cli(["score", str(source), "--input-format", "jsonl", "-o", str(out), "--output-format", "csv", "-m", "sufficiency",
                      "--min-pass-rate", "0", "--engine", "ray", "--ray-actors", "1"])
    assert result.code == 0, result.stderr
    assert pd.read_csv(out)["id"].tolist() == ["r0", "r1", "r2", "r3"]


def test_what_ray_cannot_do_is_refused_before_any_call(run_cli, tmp_path, server):
    source = write_jsonl(tmp_path / "in.jsonl", rows(2))
    for extra, message in ((["-v"], "-v/--verbose prints each row's verdicts"),
                           (["--junit", str(tmp_path / "j.xml")], "--junit with --engine ray read the scored table back")):
        result = run_cli(["score", source, "--engine", "ray", *extra])
        assert result.code == 2 and message in result.stderr, result.stderr
    local = run_cli(["score", source, "--ray-actors", "2"])
    assert local.code == 2 and "--ray-actors works with --engine ray" in local.stderr
    assert server.calls == 0


def test_empty_rows_on_ray_are_input_error_rows_as_in_a_local_run(run_cli, tmp_path):
    # a chunk of {} rows (a frame with no columns) crashed the actor: "Length of values (0) does
    # not match length of index (1)"; each is an input error row for every metric, as locally
    from ragjudge.records import EMPTY_ROW

    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows(3)) + "{}\n")
    config = tmp_path / "c.yaml"
    config.write_text("chunk_size: 3\n")
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", str(source), "-c", str(config), "-m", "sufficiency", "-o", str(out), "--no-cache", "--engine", "ray",
                      "--ray-actors", "1", "--summary-json", str(tmp_path / "s.json")])
    assert result.code == 2, result.stderr  # the error rate fails on the empty row's own input alone
    written = read_jsonl(out)
    assert [r.get("id") for r in written] == ["r0", "r1", "r2", None]
    assert [r["sufficiency_status"] for r in written] == ["ok", "ok", "ok", "error"] and written[3]["sufficiency_error"] == EMPTY_ROW
    assert json.loads((tmp_path / "s.json").read_text())["metrics"]["sufficiency"]["input_errors"] == 1


def _cut_csv(folder):
    path = folder / "cut.csv"  # the sample cut mid-row: an open quote at the end of data
    path.write_bytes((SAMPLE / "rag_eval.csv").read_bytes()[:3000])
    return path


def _bad_jsonl(folder):
    path = folder / "bad.jsonl"
    path.write_text(json.dumps(rows(1)[0]) + "\n" + '{"request": bad}\n')
    return path


def _extra_field(folder):
    path = folder / "extra.csv"
    path.write_text('request,context\n"a","b"\n"c","d","e"\n')
    return path


def _later_file_value(folder):  # the second file's value does not fit the type the first file gives the column
    data = folder / "data"
    data.mkdir()
    write_jsonl(data / "a.jsonl", [{**row, "meta": 1.5} for row in rows(3)])
    write_jsonl(data / "b.jsonl", [{**row, "id": f"b{i}", "meta": 2**60 + i} for i, row in enumerate(rows(2))])
    return data


@pytest.mark.parametrize("make, message", [
    (_cut_csv, "cut.csv: line 4 (record 3): malformed CSV: unexpected end of data; check the quoting on that line"),
    (_bad_jsonl, "bad.jsonl: line 2: not valid JSON (Expecting value at column 13); each line must hold one JSON object"),
    (_extra_field, "extra.csv: line 3 (record 2): malformed CSV: 3 fields where the header has 2; check the quoting on that line"),
    (_later_file_value, "b.jsonl: column 'meta': Integer value 1152921504606846976 not in range"),
])
def test_a_bad_file_read_in_a_ray_task_exits_2_with_the_local_message(run_cli, tmp_path, make, message):
    # Ray Data wrapped the reader's InputError ("error: unexpected RayTaskError(UserCodeException): ...", a stack trace)
    source = str(make(tmp_path))
    local = run_cli(["score", source, "-m", "sufficiency"])
    on_ray = run_cli(["score", source, "-m", "sufficiency", "--engine", "ray", "--ray-actors", "1"])
    assert local.code == on_ray.code == 2
    error = [line for line in on_ray.stderr.splitlines() if line.startswith("error: ")]
    assert error == [line for line in local.stderr.splitlines() if line.startswith("error: ")]
    assert message in error[0] and "error: unexpected" not in on_ray.stderr and "UserCodeException" not in on_ray.stderr


def test_an_output_ending_in_a_slash_is_a_folder_whatever_the_format(run_cli, tmp_path, server):
    # -o rayfold/ --output-format csv wrote one CSV file named rayfold
    source = write_jsonl(tmp_path / "in.jsonl", rows(4))
    common = ["-m", "sufficiency", "--min-pass-rate", "0", "--no-cache", "--engine", "ray", "--ray-actors", "1"]
    refused = run_cli(["score", source, "-o", f"{tmp_path / 'rayfold'}/", "--output-format", "csv", *common])
    assert refused.code == 2 and server.calls == 0
    assert f"--engine ray writes the folder {tmp_path / 'rayfold'}/ as Parquet files; to write csv, name a file: -o " \
           f"{tmp_path / 'rayfold'}.csv" in refused.stderr
    assert not (tmp_path / "rayfold").exists()
    for name, extra in (("parts", ["--output-format", "parquet"]), ("scored.parquet", [])):
        folder = tmp_path / name
        result = run_cli(["score", source, "-o", f"{folder}/", *extra, *common])
        assert result.code == 0, result.stderr
        assert folder.is_dir() and all(part.suffix == ".parquet" for part in folder.iterdir())
        assert sorted(pd.read_parquet(folder)["id"]) == [f"r{i}" for i in range(4)]


def test_a_panel_on_ray_gives_the_members_columns_and_figures_of_a_local_run(run_cli, tmp_path):
    # issue 49: a panel's member columns and the summary's panel figures (agreement, Fleiss' kappa) add up across Ray's
    # batches as across a local run's chunks
    source = str(SAMPLE / "rag_eval.jsonl")
    panel = ["--panel", "openai/fake-judge,openai/fake-lenient,openai/fake-strict", "-m", "sufficiency", "--no-cache", "--min-pass-rate", "0"]
    local_out, ray_out = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    local_summary, ray_summary = tmp_path / "local.json", tmp_path / "ray.json"
    local = run_cli(["score", source, *panel, "-o", str(local_out), "--summary-json", str(local_summary)])
    on_ray = run_cli(["score", source, *panel, "-o", str(ray_out), "--summary-json", str(ray_summary), "--engine", "ray", "--ray-actors", "2"])
    assert local.code == on_ray.code == 0, on_ray.stderr
    written = read_jsonl(local_out)
    fields = [name for name in written[0] if name.startswith("sufficiency_panel_") or name in ("id", "sufficiency_score")]
    assert "sufficiency_panel_agreement" in fields and any(name.endswith("_status") for name in fields)
    assert [[r[f] for f in fields] for r in read_jsonl(ray_out)] == [[r[f] for f in fields] for r in written]
    local_panel = json.loads(local_summary.read_text())["metrics"]["sufficiency"]["panel"]
    assert json.loads(ray_summary.read_text())["metrics"]["sufficiency"]["panel"] == local_panel and local_panel


# peer report (issue 29 item 11): both engines read the same sources (a file, a folder or a glob) into the same table
def test_ray_reads_the_folder_into_the_local_engines_table(run_cli, tmp_path, server, ray_cluster):
    import pyarrow.parquet as pq

    folder = two_files(tmp_path / "data")
    for suffix in ("jsonl", "parquet"):
        local, on_ray = tmp_path / f"local.{suffix}", tmp_path / f"ray.{suffix}"
        for engine, out in (("local", local), ("ray", on_ray)):
            result = run_cli(["score", str(folder), "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0", "--engine", engine,
                              "--no-cache"])
            assert result.code == 0, result.stderr
            assert "Traceback" not in result.stderr
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    local_table, ray_table = pq.read_table(tmp_path / "local.parquet"), pq.read_table(tmp_path / "ray.parquet")
    assert ray_table.schema.remove_metadata() == local_table.schema.remove_metadata()
    assert ray_table.to_pylist() == local_table.to_pylist()
    assert [r["meta"] for r in ray_table.to_pylist()] == ["0", "1", "2", "note 0", "note 1"]
    bad = two_files(tmp_path / "bad", first_meta=lambda i: 2**60 + i, second_meta=lambda i: 1.5)
    result = run_cli(["score", str(bad), "-m", "sufficiency", "--engine", "ray"])
    assert result.code == 2 and "Traceback" not in result.stderr
    assert f"error: {bad / 'a.jsonl'}: column 'meta': Integer value 1152921504606846976 not in range" in result.stderr
