"""A CSV record with fewer fields than its header is refused, naming its line (issue 44 item 8):
pandas reads such a record with the missing cells empty, so a file cut short mid-line was
judged as a row with "no context" and "no response". Too many fields already was an error."""

from __future__ import annotations

import io
import sys

import pytest

from ragjudge.errors import InputError
from ragjudge.io import read_table

HEADER = "id,request,context,expected_response,response\n"


def test_a_file_cut_short_mid_line_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "cut.csv"
    path.write_text(HEADER + "my-01,Who?,A passage.,Ann,Ann\nmy-02,When did the Gener")
    with pytest.raises(InputError) as info:
        read_table(str(path))
    assert str(info.value) == (f"{path}: line 3 (record 2): malformed CSV: 2 fields where the header has 5; every record needs a field "
                               "per column of the header (an empty cell still needs its comma): complete the line, or remove it if "
                               "the file was cut short")


def test_a_short_record_on_stdin_is_refused_too(monkeypatch):
    data = HEADER + "my-01,Who?,A passage.\n"  # a record that lost its last two commas
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode()), encoding="utf-8"))
    with pytest.raises(InputError, match=r"<stdin>: line 2 \(record 1\): malformed CSV: 3 fields where the header has 5"):
        read_table("-", "csv")


def test_empty_cells_with_their_commas_are_read_as_empty(tmp_path):
    path = tmp_path / "ok.csv"
    path.write_text(HEADER + "my-01,Who?,A passage.,,\nmy-02,When?,,,\n")
    frame = read_table(str(path))
    assert frame["response"].tolist() == [None, None] and frame["context"].tolist() == ["A passage.", None]
