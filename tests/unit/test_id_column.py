"""An id column under another name is suggested (issue 44 item 11): a ``qid`` column was listed
under "columns not read" with no hint, and every report named the rows ``row N``."""

from __future__ import annotations

from conftest import write_jsonl

ROW = {"question": "Where is the tower?", "contexts": ["The tower is in Paris."]}


def test_an_id_like_column_is_suggested_as_the_id(run_score, tmp_path):
    rows = [{"qid": f"my-{i:02d}", **ROW} for i in range(3)]
    run = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"])
    assert ("note: no id column; 'qid' looks like one (a different value in each row): set --map id=qid (or columns.id in the "
            "config) to name the rows by it; reports call them row 1, row 2 ... otherwise") in run.notes
    mapped = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"], map=["id=qid"])
    assert not any("looks like one" in note for note in mapped.notes)


def test_a_column_that_only_looks_like_an_id_by_name_is_not_suggested(run_score, tmp_path):
    repeated = [{"example_id": "same", **ROW} for _ in range(2)]  # not a different value in each row
    others = [{"valid": i, "width": i, **ROW} for i in range(2)]  # not an id's name
    for rows in (repeated, others):
        run = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"])
        assert not any("looks like one" in note for note in run.notes)


def test_id_names_in_the_forms_tables_use():
    from ragjudge.records import id_like

    for name in ("qid", "question_id", "example_id", "uuid", "rowId", "doc_id", "sample-id", "ID"):
        assert id_like([name], [{name: 1}, {name: 2}]) == name, name


def test_ids_that_cannot_name_the_rows_get_a_note(run_score, tmp_path):
    # --map id=source (16 rows, 2 sources) gave 16 JUnit tests of 2 names without a word; a list id named rows by its repr
    row = {"request": "Where is the tower?", "context": ["The tower is in Paris."], "response": "In Paris."}
    source = write_jsonl(tmp_path / "in.jsonl", [{**row, "source": f"s{i % 2}", "tags": ["a", "b"], "qid": f"q{i}"} for i in range(4)])
    repeated = run_score(source, map=["id=source"], min_pass_rate=["0"], metric=["sufficiency"])
    assert ("note: the id column 'source' gives the id 's0' to rows 1, 3 (2 ids repeat); rows are named by their id in JUnit and the "
            "reports, and --baseline and compare match rows by it: map a column of unique ids with --map id=COLUMN") in repeated.notes
    shaped = run_score(source, map=["id=tags"], min_pass_rate=["0"], metric=["sufficiency"])
    assert any(n.startswith("note: the id column 'tags' holds lists or objects, not ids (row 1 and 3 more)") for n in shaped.notes)
    unique = run_score(source, map=["id=qid"], min_pass_rate=["0"], metric=["sufficiency"])
    assert not any("the id column" in n for n in unique.notes)
