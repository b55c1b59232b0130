"""Reading and writing evaluation tables: JSONL, CSV, Parquet and JSON (an array of objects).

``iter_chunks`` streams a table as pandas DataFrames of at most ``chunk_size`` rows so that a
million-row file is never held in memory at once; ``TableWriter`` appends chunks and makes
the output appear atomically (temporary file, then rename). ``-`` means stdin / stdout.
Malformed input raises ``InputError`` naming the file, the line and what was wrong (exit 2).

The package: ``formats`` (format names, stdin, counting records), ``rows`` (JSON Lines rows as
read, before pandas: ``jsonl_rows``, ``RowChunk``), ``readers`` (one reader per format),
``arrow`` (Arrow typing and pyarrow's schema unification), ``sources`` (a folder or a glob
of files read as one table, by both engines: ``formats`` lists the files, ``readers`` reads them), ``writers`` (one
writer per format) and ``atomic`` (the atomic write).
"""

import importlib
from typing import Any

# Each name's module, imported on first use (PEP 562): ``formats``, ``atomic``, ``rows`` and
# ``writers`` import no pandas (a writer imports it when it writes a chunk), so a JSON Lines run
# reads its first rows and makes its first calls while pandas has not been imported yet (issue 51);
# ``arrow``, ``readers`` and ``sources`` import it.
_HOME = {
    **dict.fromkeys(["arrow_type", "plain_frame", "unify_type"], "arrow"),
    **dict.fromkeys(["STDOUT", "names_folder", "open_atomic", "to_file", "to_stdout", "write_atomic"], "atomic"),
    **dict.fromkeys(["FORMATS", "SUFFIXES", "count_records", "detect_format", "is_many", "sniff_stdin", "source_files", "spool_stdin", "spool_stream", "is_stream", "readable", "Copy", "STDIN", "is_stdin", "suffix_format"],
                     "formats"),
    **dict.fromkeys(["chunk_schemas", "chunk_schemas_and_rows", "iter_chunks", "many_chunks", "read_table"], "readers"),
    **dict.fromkeys(["RowChunk", "jsonl_chunks", "jsonl_rows"], "rows"),
    **dict.fromkeys(["Unifier", "conform_frame", "conform_table", "unified_schema"], "sources"),
    **dict.fromkeys(["CsvWriter", "JsonlWriter", "JsonWriter", "TableWriter", "output_format", "read_record", "write_table"], "writers"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'ragjudge.io' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ragjudge.io.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])


__all__ = [
    "FORMATS", "RowChunk", "SUFFIXES", "TableWriter", "Unifier", "chunk_schemas", "chunk_schemas_and_rows", "conform_frame", "conform_table", "count_records",
    "is_many", "many_chunks", "names_folder", "source_files", "unified_schema", "CsvWriter", "JsonWriter", "JsonlWriter", "arrow_type", "detect_format",
    "iter_chunks", "jsonl_chunks", "jsonl_rows", "open_atomic", "plain_frame", "read_record", "read_table", "sniff_stdin", "spool_stdin", "spool_stream", "is_stream", "readable", "Copy", "suffix_format", "unify_type", "write_atomic",
    "write_table", "STDOUT", "to_file", "to_stdout", "output_format", "STDIN", "is_stdin",
]
