"""Reading and writing evaluation tables: JSONL, CSV, Parquet and JSON (an array of objects).

``iter_chunks`` streams a table as pandas DataFrames of at most ``chunk_size`` rows so that a
million-row file is never held in memory at once; ``TableWriter`` appends chunks and makes
the output appear atomically (temporary file, then rename). ``-`` means stdin / stdout.
Malformed input raises ``InputError`` naming the file, the line and what was wrong (exit 2).

The package: ``formats`` (format names, stdin), ``readers`` (one reader per format),
``arrow`` (Arrow typing and pyarrow's schema unification), ``sources`` (a folder or a glob
of files read as one table, by both engines: ``formats`` lists the files, ``readers`` reads them), ``writers`` (one
writer per format) and ``atomic`` (the atomic write).
"""

from ragjudge.io.arrow import arrow_type, plain_frame, unify_type
from ragjudge.io.atomic import names_folder, open_atomic, write_atomic
from ragjudge.io.formats import FORMATS, SUFFIXES, detect_format, is_many, sniff_stdin, source_files, spool_stdin, suffix_format
from ragjudge.io.readers import chunk_schemas, chunk_schemas_and_rows, count_records, iter_chunks, many_chunks, read_table
from ragjudge.io.sources import Unifier, conform_frame, conform_table, unified_schema
from ragjudge.io.writers import CsvWriter, JsonlWriter, JsonWriter, TableWriter, read_record, write_table

__all__ = [
    "FORMATS", "SUFFIXES", "TableWriter", "Unifier", "chunk_schemas", "chunk_schemas_and_rows", "conform_frame", "conform_table", "count_records",
    "is_many", "many_chunks", "names_folder", "source_files", "unified_schema", "CsvWriter", "JsonWriter", "JsonlWriter", "arrow_type", "detect_format",
    "iter_chunks", "open_atomic", "plain_frame", "read_record", "read_table", "sniff_stdin", "spool_stdin", "suffix_format", "unify_type", "write_atomic",
    "write_table",
]
