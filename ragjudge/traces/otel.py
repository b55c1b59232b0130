"""OpenTelemetry / OpenInference traces in, verdicts out to Phoenix as span annotations: the
public face of four modules, one concern each.

- ``forms``: which form a trace file is in (``is_otlp_file``, ``is_phoenix_file``,
  ``is_phoenix_frame``), from its first bytes;
- ``otlp``: OTLP JSON as the OpenTelemetry Collector's file exporter writes it
  (``read_otlp_file``);
- ``phoenix``: Phoenix's span DataFrame, a saved span table and a live project
  (``read_phoenix_frame``, ``read_phoenix_file``, ``read_project``: a whole project, for Python;
  a table cut at a limit is said, ``CutTracesWarning``), and the connection
  to a Phoenix server (``endpoint_or_fail``, ``probe``, ``check_endpoint``);
- ``phoenix_sink``: verdicts as Phoenix span and trace annotations (``log_annotations``,
  ``write_annotations``, ``annotation_frames``);

all of them reading into one span model, made into rows by ``openinference`` (its docstring
has the rows' cells). Source: the spans that Arize Phoenix, Arize AX and the OpenInference
instrumentations (LangChain, LlamaIndex, DSPy, Haystack, OpenAI...) record.

Errors (``ragjudge.errors``, exit 2): ``InputError`` for a file of neither form, no span,
spans in another convention than OpenInference, a Phoenix that cannot be reached;
``ConfigError`` for no Phoenix endpoint and Phoenix's client not installed. Reading needs no
OpenTelemetry package (plain JSON and pandas); the sink needs the ``[phoenix]`` extra.
"""

from __future__ import annotations

import os
from typing import Any

from ragjudge.traces.forms import is_otlp_file, is_phoenix_file, is_phoenix_frame
from ragjudge.traces.openinference import trace_files
from ragjudge.traces.otlp import read_otlp_file
from ragjudge.traces.phoenix import (ENDPOINT_ENV, CutTracesWarning, check_endpoint, endpoint_or_fail, probe, read_phoenix_file,
                                     read_phoenix_frame, read_project)
from ragjudge.traces.phoenix_sink import AnnotationLog, annotation_frames, log_annotations, trace_annotations_path, write_annotations
from ragjudge.traces.spans import COLUMNS


def read_traces(source: Any, expected_facts: str | None = None, expected_response: str | None = None) -> Any:
    """Any OpenInference trace source -> the rows table: a path to an OTLP JSON file or to a
    saved Phoenix span table (``.parquet``/``.jsonl``), or a Phoenix span DataFrame."""
    if isinstance(source, (str, os.PathLike)):
        if is_otlp_file(source):
            return read_otlp_file(source, expected_facts, expected_response)
        return read_phoenix_file(source, expected_facts, expected_response)
    return read_phoenix_frame(source, expected_facts, expected_response)


__all__ = ["AnnotationLog", "COLUMNS", "CutTracesWarning", "ENDPOINT_ENV", "annotation_frames", "check_endpoint", "endpoint_or_fail", "is_otlp_file",
           "is_phoenix_file", "is_phoenix_frame", "log_annotations", "probe", "read_otlp_file", "read_phoenix_file", "read_phoenix_frame",
           "read_project", "read_traces", "trace_annotations_path", "trace_files", "write_annotations"]
