"""``ragjudge calibrate``: decision settings chosen on the team's labels from the cached replies
(no judge call), written as a config that scores the same rows with the agreement it promised;
``--suggest`` lists the least certain unlabelled rows (issue 48)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from conftest import ROOT, write_jsonl

YES_THRESHOLD = ["sufficiency.yes_threshold=0.5"]  # P(yes) is read (the reply's log-probabilities are asked for)


def _rows(group: str, count: int, yes: bool, label: str | None, start: int) -> list[dict]:
    """Rows whose context holds the request's words (the fake judge writes yes) or not (no);
    each row's texts its own, so each has its own cached reply."""
    rows = []
    for i in range(start, start + count):
        context = f"The tower {i} is in Paris." if yes else f"The river {i} is long."
        row = {"id": f"{group}{i}", "request": f"Where is the tower {i}?", "context": [context]}
        if label is not None:
            row["human"] = label
        rows.append(row)
    return rows


def _scored(run_score, judge, tmp_path) -> str:
    """60 labelled rows in three groups the judge scores with a different P(yes) each: sure yes
    (0.9, people agree), unsure yes (0.6, people say no: the judge says yes too easily), no (0.2,
    people agree); and 12 unlabelled rows, P(yes) 0.55 and 0.95. Scored with yes_threshold 0.5."""
    groups = [("a", 20, True, "yes", 0.9), ("b", 20, True, "no", 0.6), ("c", 20, False, "no", 0.2),
              ("u", 6, True, None, 0.55), ("v", 6, True, None, 0.95)]
    everything = []
    for n, (group, count, yes, label, p_yes) in enumerate(groups):
        rows = _rows(group, count, yes, label, 100 * n)
        judge.p_yes = p_yes
        run = run_score(write_jsonl(tmp_path / f"{group}.jsonl", rows), metric=["sufficiency"], set_=YES_THRESHOLD, min_pass_rate=["0"],
                        quiet=True)
        assert run.code == 0, run.error
        everything += rows
    return write_jsonl(tmp_path / "all.jsonl", everything)


def test_calibrate_chooses_the_threshold_people_agree_with_and_the_config_scores_so(run_score, run_cli, judge, cache_dir, tmp_path):
    table = _scored(run_score, judge, tmp_path)
    calls = judge.calls
    out = tmp_path / "my-judge.yaml"
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"sufficiency": {"yes_threshold": 0.5}, "gate": {"min_pass_rate": {"sufficiency": 0}}}))
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "-c", str(base), "--model", "openai/fake-judge",
                    "--cache-dir", cache_dir, "-o", str(out)], judge=False)
    assert done.code == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[:6] == [
        "sufficiency: 60 labelled rows with a cached reply",
        "  agreement with your labels, settings you scored with: 0.67 [0.54, 0.77]",  # Wilson, 40 of 60
        "  out of fold (5 folds), settings fitted on the other folds: 1.00 [0.94, 1.00]",
        "  chosen on every row: yes_threshold 0.5 -> 0.76",  # the middle of 0.61..0.90, where every row agrees
        "  not tried (no verdict moves with them on these rows): fact_threshold, fact_evidence, request_evidence",  # reference-free rows
        "  stability: agreement with yes_threshold moved -0.05: 1.00, -0.02: 1.00, +0.02: 1.00, +0.05: 1.00",
    ]
    written = yaml.safe_load(out.read_text())
    assert written["sufficiency"] == {"yes_threshold": 0.76} and written["gate"] == {"min_pass_rate": {"sufficiency": 0}}
    assert out.read_text().startswith("# sufficiency: agreement with the labels out of fold 1.00 against 0.67")
    assert judge.calls == calls  # no judge call
    again = tmp_path / "again.parquet"
    rescored = run_score(table, config=str(out), output=str(again), quiet=True)
    assert rescored.code == 0 and judge.calls == calls  # every reply from the cache
    frame = pd.read_parquet(again)
    labelled = frame[frame["human"].notna()]
    assert ((labelled["sufficiency_score"] == 1.0) == (labelled["human"] == "yes")).all()


def test_calibrate_writes_nothing_when_the_settings_scored_with_are_as_good(run_score, run_cli, judge, cache_dir, tmp_path):
    rows = []
    for group, yes, label, p_yes, start in (("a", True, "yes", 0.9, 0), ("c", False, "no", 0.1, 100)):  # every verdict right at 0.5
        judge.p_yes = p_yes
        part = _rows(group, 15, yes, label, start)
        assert run_score(write_jsonl(tmp_path / f"{group}.jsonl", part), metric=["sufficiency"], set_=YES_THRESHOLD, min_pass_rate=["0"],
                         quiet=True).code == 0
        rows += part
    table = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "my-judge.yaml"
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--set", YES_THRESHOLD[0], "--model", "openai/fake-judge",
                    "--cache-dir", cache_dir, "-o", str(out)], judge=False)
    assert done.code == 1 and not out.exists()
    assert "  chosen on every row: no change" in done.stdout.splitlines()
    assert done.stdout.splitlines()[-1] == ("nothing written: no metric's fitted settings beat the settings you scored with out of fold")


def test_calibrate_without_cached_replies_says_to_score_first(run_cli, cache_dir, tmp_path):
    table = write_jsonl(tmp_path / "in.jsonl", _rows("a", 25, True, "yes", 0))
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir,
                    "-o", str(tmp_path / "x.yaml")], judge=False)
    assert done.code == 2
    assert ("calibrate sufficiency: 0 labelled row(s) have a cached reply (25 labelled); it needs at least 20: score the table first "
            "(ragjudge score ... with the same model, --api-base, --map and config), then calibrate") in done.stderr


def test_suggest_lists_the_unlabelled_rows_nearest_the_decision(run_score, run_cli, judge, cache_dir, tmp_path):
    table = _scored(run_score, judge, tmp_path)
    out = tmp_path / "to_label.csv"
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--set", YES_THRESHOLD[0], "--model", "openai/fake-judge",
                    "--cache-dir", cache_dir, "--suggest", "8", "-o", str(out)], judge=False)
    assert done.code == 0, done.stderr
    chosen = pd.read_csv(out)
    # P(yes) 0.55 (0.05 from the threshold) before 0.95 (0.45 from it); labelled rows never
    assert chosen["id"].tolist() == [f"u{i}" for i in range(300, 306)] + ["v400", "v401"]
    assert chosen["human"].isna().all()
    assert "not a random sample" in done.stdout  # their labels would bias the corrected pass rate (docs/calibration.md)


def test_calibrate_chooses_completeness_pass_mark_against_ratings(run_score, run_cli, judge, cache_dir, tmp_path):
    # the fake judge scores a response with all three statements 5, one of three 2, none 1; people rate them 5, 3 and 1,
    # and "rating >= 3" passes: the pass mark 3 fails the responses people pass
    answer = "The tower is in Paris. It is tall. It is old."
    rows = [{"id": f"r{i}", "request": f"Tell me about tower {i}", "context": ["x"], "expected_response": answer,
             "response": [answer, "The tower is in Paris.", "Nothing here."][i % 3] + f" ({i})", "human": [5, 3, 1][i % 3]} for i in range(30)]
    table = write_jsonl(tmp_path / "in.jsonl", rows)
    assert run_score(table, metric=["completeness"], min_pass_rate=["0"], quiet=True).code == 0
    out = tmp_path / "my-judge.yaml"
    done = run_cli(["calibrate", table, "--labels", "completeness=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir,
                    "-o", str(out)], judge=False)
    assert done.code == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[1:4] == [
        "  agreement with your labels, settings you scored with: 0.67 [0.49, 0.81]",
        "  out of fold (5 folds), settings fitted on the other folds: 1.00 [0.89, 1.00]",
        "  chosen on every row: threshold 3 -> 1.6",  # the middle of 1.1..2.0: above the 1s, at or below the 2s
    ]
    # the model and cache the rows were scored with travel too: scoring with the file alone finds the same replies
    assert yaml.safe_load(out.read_text()) == {"judge": {"model": "openai/fake-judge"}, "cache": {"dir": cache_dir},
                                               "thresholds": {"completeness": 1.6}}


def test_calibrate_moves_the_pass_mark_only_where_the_labels_pass_as_they_did(run_score, run_cli, judge, cache_dir, tmp_path):
    # a label passes at the judge's own mark (issue 60): the fake judge scores 5, 2 and 1, people rate 5, 3 and 1.8, and
    # calibrate wrote "threshold 3 -> 1.6", where a rating of 1.8 passes: the next run corrected by labels of another meaning
    answer = "The tower is in Paris. It is tall. It is old."
    rows = [{"id": f"r{i}", "request": f"Tell me about tower {i}", "context": ["x"], "expected_response": answer,
             "response": [answer, "The tower is in Paris.", "Nothing here."][i % 3] + f" ({i})", "human": [5, 3, 1.8][i % 3]}
            for i in range(30)]
    table = write_jsonl(tmp_path / "in.jsonl", rows)
    assert run_score(table, metric=["completeness"], min_pass_rate=["0"], quiet=True).code == 0
    out = tmp_path / "my-judge.yaml"
    done = run_cli(["calibrate", table, "--labels", "completeness=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir,
                    "-o", str(out)], judge=False)
    assert done.code == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[3:5] == [
        "  chosen on every row: threshold 3 -> 2",  # the middle of 1.9..2.0: above the 1.8 rating and the 1s, at or below the 2s
        "  pass mark tried from 1.9 to 3 only: your labels pass at the judge's mark, and there they pass as at 3",
    ]
    assert yaml.safe_load(out.read_text())["thresholds"] == {"completeness": 2.0}
    # scored with the written mark, the labels pass as they did at 3: the 5s and 3s, not the 1.8s
    summary = tmp_path / "s.json"
    assert run_score(table, config=str(out), metric=["completeness"], labels=["completeness=human"], min_pass_rate=["0"],
                     summary_json=str(summary)).code == 0
    corrected = json.loads(summary.read_text())["metrics"]["completeness"]["corrected"]["pass_rate"]
    assert (corrected["labels_only"], corrected["agreement"]) == (2 / 3, 1.0)


def _completeness_table(run_score, tmp_path, ratings) -> str:
    """30 rows the fake judge scores 5, 2 and 1 in turn, rated ``ratings`` (one a row), scored at the default mark 3."""
    answer = "The tower is in Paris. It is tall. It is old."
    rows = [{"id": f"r{i}", "request": f"Tell me about tower {i}", "context": ["x"], "expected_response": answer,
             "response": [answer, "The tower is in Paris.", "Nothing here."][i % 3] + f" ({i})", "human": rating}
            for i, rating in enumerate(ratings)]
    table = write_jsonl(tmp_path / "in.jsonl", rows)
    assert run_score(table, metric=["completeness"], min_pass_rate=["0"], quiet=True).code == 0
    return table


def test_calibrate_on_labels_of_one_class_writes_nothing_and_says_why(run_score, run_cli, judge, cache_dir, tmp_path):
    # issue 60: every rating a pass wrote "threshold 3 -> 1.5" with out-of-fold agreement 1.00 (a mark that passes every row)
    table = _completeness_table(run_score, tmp_path, [4] * 30)
    out = tmp_path / "my-judge.yaml"
    done = run_cli(["calibrate", table, "--labels", "completeness=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir,
                    "-o", str(out)], judge=False)
    assert done.code == 1 and not out.exists()
    assert done.stdout.splitlines()[1:] == [
        "  agreement with your labels, settings you scored with: 0.33 [0.19, 0.51]",
        "  not fitted: every one of the 30 labels is a pass (rating >= 3): a setting that decides every row so agrees with all of "
        "them, and no agreement tells settings apart; label rows that are a fail (rating < 3) too (at least 5, one a fold)",
        "nothing written: no metric's labels could be fitted (see above)",
    ]


def test_calibrate_with_fewer_labels_of_a_class_than_folds_writes_nothing_and_says_why(run_score, run_cli, judge, cache_dir, tmp_path):
    # the other shape: 3 fails among 30 ratings cannot put one in each of 5 folds; with --folds 3 they can, and it fits
    table = _completeness_table(run_score, tmp_path, [1 if i in (2, 5, 8) else 4 for i in range(30)])
    out = tmp_path / "my-judge.yaml"
    command = ["calibrate", table, "--labels", "completeness=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir, "-o", str(out)]
    done = run_cli(command, judge=False)
    assert done.code == 1 and not out.exists()
    assert done.stdout.splitlines()[2] == ("  not fitted: only 3 of the 30 labels are a fail (rating < 3), fewer than the 5 folds (each "
                                           "needs one); label more such rows (or give fewer --folds, at least 2)")
    done = run_cli([*command, "--folds", "3"], judge=False)
    assert done.code == 0 and "not fitted" not in done.stdout and out.exists()


def test_calibrate_on_a_table_scored_with_map_names_the_mapping_it_lacks(run_score, run_cli, judge, cache_dir, tmp_path):
    # issue 60 item 21: scored with --map request=ask, calibrate without it said "0 labelled row(s) have a cached reply (25
    # labelled) ... score the table first"; the table was scored, the missing piece is the mapping
    rows = [{"id": f"r{i}", "ask": f"Where is the tower {i}?", "blob": [f"The tower {i} is in Paris." if i % 2 else "Nothing."],
             "human": "yes" if i % 2 else "no"} for i in range(25)]
    table = write_jsonl(tmp_path / "in.jsonl", rows)
    assert run_score(table, metric=["sufficiency"], min_pass_rate=["0"], map=["request=ask", "context=blob"], quiet=True).code == 0
    command = ["calibrate", table, "--labels", "sufficiency=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir,
               "-o", str(tmp_path / "x.yaml")]
    done = run_cli(command, judge=False)
    assert done.code == 2 and done.stderr.strip() == (
        "error: calibrate sufficiency: no column of the table is mapped to the request and context sufficiency needs (columns not "
        "read: ask, blob), so no row's cached reply can be found: calibrate reads the table as score did; give it the --map you "
        "scored with (e.g. --map request=COLUMN, or the config's columns:)")
    # the other shape: the request mapped, the context not (an empty retrieval would be judged without a call)
    done = run_cli([*command, "--map", "request=ask"], judge=False)
    assert done.code == 2 and "mapped to the context sufficiency needs (columns not read: blob)" in done.stderr
    done = run_cli([*command, "--map", "request=ask", "--map", "context=blob"], judge=False)
    assert done.stdout.startswith("sufficiency: 25 labelled rows with a cached reply"), done.stderr


def test_calibrate_refuses_a_panel_naming_how_to_calibrate_its_members(run_cli, cache_dir, tmp_path):
    table = write_jsonl(tmp_path / "in.jsonl", _rows("a", 25, True, "yes", 0))
    config = tmp_path / "panel.yaml"
    config.write_text(yaml.safe_dump({"judge": {"panel": ["openai/fake-judge", "openai/fake-strict"]}}))
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "-c", str(config), "--cache-dir", cache_dir,
                    "-o", str(tmp_path / "x.yaml")], judge=False)
    assert done.code == 2 and "calibrate each member alone, with a config without judge.panel and --model MEMBER" in done.stderr


def test_suggest_without_p_yes_says_the_rows_are_in_table_order(run_score, run_cli, judge, cache_dir, tmp_path):
    # it said "the least certain first" of rows listed in table order
    rows = _rows("u", 6, True, None, 0) + _rows("a", 4, True, "yes", 100)
    table = write_jsonl(tmp_path / "in.jsonl", rows)
    assert run_score(table, metric=["sufficiency"], min_pass_rate=["0"], quiet=True).code == 0  # no yes_threshold: P(yes) not read
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir,
                    "--suggest", "3", "-o", str(tmp_path / "to_label.csv")], judge=False)
    assert done.code == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith("in table order: the cached replies carry no P(yes) (score with sufficiency.yes_threshold set, "
                                        "e.g. --set sufficiency.yes_threshold=0.5, to rank rows by the judge's certainty)")
    assert pd.read_csv(tmp_path / "to_label.csv")["id"].tolist() == ["u0", "u1", "u2"]


def test_calibrate_with_too_few_labels_says_to_label_more(run_cli, cache_dir, tmp_path):
    # it said "score the table first" of a scored table with 8 labels
    table = write_jsonl(tmp_path / "in.jsonl", _rows("a", 8, True, "yes", 0) + _rows("u", 30, True, None, 100))
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir,
                    "-o", str(tmp_path / "x.yaml")], judge=False)
    assert done.code == 2
    assert "calibrate sufficiency: 8 row(s) of 38 carry a label in 'human'; it needs at least 20: label more rows" in done.stderr


def test_calibrate_will_not_write_over_the_config_scored_with(run_cli, cache_dir, tmp_path):
    config = tmp_path / "my.yaml"
    config.write_text("# my settings\nsufficiency: {yes_threshold: 0.5}\n")
    table = write_jsonl(tmp_path / "in.jsonl", _rows("a", 25, True, "yes", 0))
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "-c", str(config), "--cache-dir", cache_dir, "-o", str(config)],
                   judge=False)
    assert done.code == 2 and "is the config you scored with (-c): write the calibrated config to another file" in done.stderr
    assert config.read_text().startswith("# my settings")


def test_calibrate_refuses_more_folds_than_rows_and_a_non_yaml_output(run_score, run_cli, judge, cache_dir, tmp_path):
    # --folds 1000000000000 ran for ten minutes and grew past 1.2 GB; -o cal.csv wrote YAML into it
    table = _scored(run_score, judge, tmp_path)
    base = ["calibrate", table, "--labels", "sufficiency=human", "--set", YES_THRESHOLD[0], "--model", "openai/fake-judge",
            "--cache-dir", cache_dir]
    many = run_cli([*base, "--folds", "1000000000000", "-o", str(tmp_path / "x.yaml")], judge=False)
    assert many.code == 2 and "--folds 1000000000000: more folds than the 60 labelled rows with a cached reply" in many.stderr
    csv = run_cli([*base, "-o", str(tmp_path / "x.csv")], judge=False)
    assert csv.code == 2 and "calibrate writes a YAML config; name it .yaml" in csv.stderr and not (tmp_path / "x.csv").exists()
    kept = run_cli([*base, "-o", str(tmp_path / "x.yaml")], judge=False)
    assert kept.code == 0, kept.stderr
    written = yaml.safe_load((tmp_path / "x.yaml").read_text())
    assert written["judge"] == {"model": "openai/fake-judge"} and written["sufficiency"] == {"yes_threshold": 0.76}  # --set, then the fit


def test_calibrate_counts_a_repeated_id_once_and_judges_only_the_labelled_metrics(run_score, run_cli, judge, cache_dir, tmp_path):
    # repeated ids were counted twice (110 "labelled rows" of 60), the same row in both sides of a fold
    table = _scored(run_score, judge, tmp_path)
    rows = [json.loads(line) for line in open(table, encoding="utf-8")]
    doubled = write_jsonl(tmp_path / "doubled.jsonl", rows + rows[:20])
    done = run_cli(["calibrate", doubled, "--labels", "sufficiency=human", "--set", YES_THRESHOLD[0], "--model", "openai/fake-judge",
                    "--cache-dir", cache_dir, "-o", str(tmp_path / "x.yaml")], judge=False)
    assert done.code == 0, done.stderr
    assert "note: 20 row(s) repeat an earlier id in 'id': each id is calibrated once (its first row)" in done.stderr
    assert done.stdout.splitlines()[0] == "sufficiency: 60 labelled rows with a cached reply"


def test_suggest_never_writes_over_the_table_it_reads(run_score, run_cli, judge, cache_dir, tmp_path):
    # a breaker's find: -o naming the input replaced the whole scored table with the 3 suggested rows, exit 0
    table = _scored(run_score, judge, tmp_path)
    before = Path(table).read_bytes()
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--set", YES_THRESHOLD[0], "--model", "openai/fake-judge",
                    "--cache-dir", cache_dir, "--suggest", "3", "-o", table], judge=False)
    assert done.code == 2
    assert f"-o {table} is the table you calibrate; writing would replace it: give -o another name" in done.stderr
    assert Path(table).read_bytes() == before


def test_suggest_to_stdout_keeps_its_words_off_the_rows(run_score, run_cli, judge, cache_dir, tmp_path):
    table = _scored(run_score, judge, tmp_path)
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--set", YES_THRESHOLD[0], "--model", "openai/fake-judge",
                    "--cache-dir", cache_dir, "--suggest", "3", "-o", "-"], judge=False)
    assert done.code == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]  # every stdout line is a row
    assert len(rows) == 3 and "not a random sample" in done.stderr and done.stderr.startswith("wrote -: 3 unlabelled row(s)")


def test_folds_beside_suggest_is_refused(run_cli, tmp_path):
    table = write_jsonl(tmp_path / "in.jsonl", _rows("a", 3, True, "yes", 0))
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--suggest", "3", "--folds", "3", "-o", str(tmp_path / "t.csv")],
                   judge=False)
    assert done.code == 2 and "--folds is for fitting settings; --suggest lists rows to label" in done.stderr


def test_calibrate_without_a_cache_makes_none(run_cli, tmp_path):
    # a breaker's find: calibrate --cache-dir newdir made newdir/responses (it only reads)
    table = write_jsonl(tmp_path / "in.jsonl", _rows("a", 25, True, "yes", 0))
    folder = tmp_path / "newdir"
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--model", "openai/fake-judge", "--cache-dir", str(folder),
                    "-o", str(tmp_path / "x.yaml")], judge=False)
    assert done.code == 2 and "0 labelled row(s) have a cached reply (25 labelled); it needs at least 20: score the table first" in done.stderr
    assert not folder.exists()


def test_a_misspelt_labels_metric_is_named_as_calibrate_takes_it(run_cli, tmp_path):
    # a breaker's find: "-m/--metric: unknown metric 'sufficency'" from a command that has no -m
    table = write_jsonl(tmp_path / "in.jsonl", _rows("a", 3, True, "yes", 0))
    done = run_cli(["calibrate", table, "--labels", "sufficency=human", "-o", str(tmp_path / "x.yaml")], judge=False)
    assert done.code == 2 and "--labels sufficency=...: unknown metric 'sufficency'; use sufficiency, completeness" in done.stderr
    assert "-m/--metric" not in done.stderr


def test_suggest_with_nothing_to_suggest_writes_nothing_and_says_why(run_score, run_cli, judge, cache_dir, tmp_path):
    # a breaker's find: with every row labelled, --suggest 5 wrote an empty to_label.csv, exit 0, and blamed the missing P(yes)
    table = write_jsonl(tmp_path / "in.jsonl", _rows("a", 6, True, "yes", 0))
    assert run_score(table, metric=["sufficiency"], min_pass_rate=["0"], quiet=True).code == 0
    out = tmp_path / "to_label.csv"
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir,
                    "--suggest", "5", "-o", str(out)], judge=False)
    assert done.code == 1 and not out.exists()
    assert done.stderr == ("nothing written: sufficiency: every one of the 6 row(s) carries a label in 'human': no row is left to "
                           "label\n")
    # a second shape: unlabelled rows, but none judged (an empty cache): it listed none, exit 0
    unjudged = write_jsonl(tmp_path / "new.jsonl", _rows("u", 4, True, None, 50) + _rows("b", 1, True, "no", 60))
    done = run_cli(["calibrate", unjudged, "--labels", "sufficiency=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir,
                    "--suggest", "5", "-o", str(out)], judge=False)
    assert done.code == 1 and not out.exists()
    assert done.stderr.startswith("nothing written: sufficiency: none of the 4 unlabelled row(s) has an ok verdict of sufficiency in "
                                  "the cache: score the table first")


def test_calibrate_names_labelled_rows_the_metric_skips_not_as_unscored(run_score, run_cli, judge, cache_dir, tmp_path):
    # found trying the README as a new user: the sample table scored, ratings on all 32 rows, of which completeness skips 24
    # (no response): calibrate said "8 labelled row(s) have a cached reply (32 labelled) ... score the table first", of a
    # table just scored; no scoring gives those rows a reply: the fix is labels on rows the metric judges
    answer = "The tower is in Paris. It is tall. It is old."
    rows = [{"id": f"r{i}", "request": f"Tell me about tower {i}", "context": ["x"], "expected_response": answer,
             "human": 4 if i % 2 else 1} | ({"response": f"The tower is in Paris. ({i})"} if i < 8 else {}) for i in range(30)]
    table = write_jsonl(tmp_path / "in.jsonl", rows)
    assert run_score(table, metric=["completeness"], min_pass_rate=["0"], quiet=True).code == 0
    done = run_cli(["calibrate", table, "--labels", "completeness=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir,
                    "-o", str(tmp_path / "x.yaml")], judge=False)
    assert done.code == 2
    assert done.stderr.strip() == (
        "error: calibrate completeness: 8 labelled row(s) have a cached reply (30 labelled; left out: 22 that completeness does not "
        "judge (no response)); it needs at least 20: label more rows that completeness judges")


def test_calibrate_says_why_each_labelled_row_left_out_is(run_score, run_cli, judge, cache_dir, tmp_path):
    # the other shape, where calibrate goes on: 60 rows scored, 5 more labelled rows with no context (sufficiency skips them)
    # and 3 labelled rows never scored; the first line said "(8 labelled rows without one left out)" of both kinds alike
    table = _scored(run_score, judge, tmp_path)
    rows = [json.loads(line) for line in Path(table).read_text().splitlines()]
    rows += [{"id": f"e{i}", "request": f"Where is the tower {i}?", "human": "yes"} for i in range(5)]  # (an empty list is judged: no)
    rows += _rows("n", 3, True, "no", 900)  # labelled, never scored: no cached reply
    table = write_jsonl(tmp_path / "more.jsonl", rows)
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--set", YES_THRESHOLD[0], "--model", "openai/fake-judge",
                    "--cache-dir", cache_dir, "-o", str(tmp_path / "x.yaml")], judge=False)
    assert done.stdout.splitlines()[0] == ("sufficiency: 60 labelled rows with a cached reply (left out: 5 that sufficiency does not "
                                           "judge (no context); 3 without a cached reply)"), done.stderr


def _help(run_cli, command: str) -> str:
    """``ragjudge COMMAND --help`` as one line of words (the box drawing and wrapping taken out)."""
    import re

    return " ".join(re.sub("[│╭╮╰╯─]", " ", run_cli([command, "--help"], judge=False).stdout).split())


def test_calibrate_help_gives_the_exit_codes_it_exits_with(run_score, run_cli, judge, cache_dir, tmp_path):
    # found trying the README as a new user: calibrate on labels of one class exits 1, and neither its --help nor the README's
    # exit-code table (1: "a quality gate failed") said what 1 means from calibrate
    shown = _help(run_cli, "calibrate")
    assert ("Exit codes: 0 the config written (with --suggest: the rows to label), 1 nothing written (no fitted setting beats the "
            "settings you scored with out of fold, or the labels cannot be fitted: one class, or fewer of one than --folds; each line "
            "says why), 2 bad input or usage") in shown
    table = _completeness_table(run_score, tmp_path, [4] * 30)  # one class: exit 1, as the help says
    done = run_cli(["calibrate", table, "--labels", "completeness=human", "--model", "openai/fake-judge", "--cache-dir", cache_dir,
                    "-o", str(tmp_path / "x.yaml")], judge=False)
    assert done.code == 1 and done.stdout.splitlines()[-1] == "nothing written: no metric's labels could be fitted (see above)"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`ragjudge calibrate`: nothing written" in readme


def test_report_help_says_it_exits_0_whatever_the_gate(run_score, run_cli, judge, tmp_path):
    # the other shape: report writes the report of a failing gate and exits 0, and its --help named no exit code
    assert ("Exit codes: 0 the report written, whether its gate passed or failed (the verdict is in the report; ragjudge score and "
            "ragjudge compare exit by the gate), 2 bad input or usage") in _help(run_cli, "report")
    table = _completeness_table(run_score, tmp_path, [4] * 30)
    scored = tmp_path / "scored.parquet"
    assert run_score(table, metric=["completeness"], output=str(scored), quiet=True).code == 1  # the default gate fails
    done = run_cli(["report", str(scored), "-o", str(tmp_path / "r.html")], judge=False)
    assert done.code == 0 and (tmp_path / "r.html").exists()


def test_stability_never_measures_a_setting_past_what_it_may_hold(run_score, run_cli, judge, cache_dir, tmp_path):
    # found trying docs/calibration.md as a new user: the stability line moved request_evidence 1 to "+0.02: 0.62, +0.05: 0.62",
    # the agreement of request_evidence 1.02 and 1.05, which no config may hold (0..1]; here the shape that asserts the figures:
    # people say yes where P(yes) is 0.97, no where it is 0.94, so calibrate chooses yes_threshold 0.95, the highest it
    # searches; +0.05 is yes_threshold 1.0, which the judge refuses (0 < yes_threshold < 1): it printed a figure for it
    rows = []
    for group, p_yes, label, start in (("a", 0.97, "yes", 0), ("b", 0.94, "no", 100)):
        judge.p_yes = p_yes
        part = _rows(group, 15, True, label, start)
        assert run_score(write_jsonl(tmp_path / f"{group}.jsonl", part), metric=["sufficiency"], set_=YES_THRESHOLD, min_pass_rate=["0"],
                         quiet=True).code == 0
        rows += part
    table = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "my-judge.yaml"
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--set", YES_THRESHOLD[0], "--model", "openai/fake-judge",
                    "--cache-dir", cache_dir, "-o", str(out)], judge=False)
    assert done.code == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "  chosen on every row: yes_threshold 0.5 -> 0.95" in lines
    assert ("  stability: agreement with yes_threshold moved -0.05: 0.50, -0.02: 0.50, +0.02: 1.00 (+0.05: past what yes_threshold "
            "may hold, 0.01 to 0.99; not measured)") in lines


def test_suggest_to_a_file_of_no_table_format_names_calibrates_own_fix_before_any_work(run_cli, tmp_path):
    # found trying docs/calibration.md as a new user: calibrate --suggest 3 -o x.yaml read the table, ranked the rows, then said
    # "cannot tell the format of 'x.yaml' ...; give ragjudge score --format jsonl|csv|parquet|json" (calibrate has no --format)
    table = write_jsonl(tmp_path / "in.jsonl", _rows("a", 3, True, "yes", 0))
    done = run_cli(["calibrate", table, "--labels", "sufficiency=human", "--suggest", "3", "-o", str(tmp_path / "x.yaml")], judge=False)
    assert done.code == 2 and done.stderr.strip() == (
        f"error: -o {tmp_path / 'x.yaml'}: with --suggest, -o is the table of rows to label; name it .csv, .json, .jsonl, .ndjson, "
        ".parquet, .pq (or - for stdout); the config calibrate writes is without --suggest")
    # the other shape: a suffix of no format at all, on a table that does not exist: the -o is named first, nothing is read
    done = run_cli(["calibrate", str(tmp_path / "absent.jsonl"), "--labels", "sufficiency=human", "--suggest", "3",
                    "-o", str(tmp_path / "rows.txt")], judge=False)
    assert done.code == 2 and "with --suggest, -o is the table of rows to label" in done.stderr and "--format" not in done.stderr
