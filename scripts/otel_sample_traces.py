"""Write sample_data/otlp_traces.jsonl: three small RAG traces recorded with opentelemetry-sdk
under the OpenInference semantic conventions (openinference-semantic-conventions' attribute
names) and exported with OpenTelemetry's own OTLP encoder to OTLP JSON, one
``ExportTraceServiceRequest`` per line with hex ids, as the OpenTelemetry Collector's file
exporter writes it (docs/from-phoenix.md). Ids and times are fixed, so the file is the same on
every run. Needs the [otel] extra.

    python scripts/otel_sample_traces.py

The traces: the Eiffel Tower question, whose retrieved passage holds the expected fact; the
Hamlet question, whose passage misses both; a greeting with no retriever span (one skipped
row). The expectations are in the root span's ``metadata`` attribute (JSON), read with
``--expected-facts-attribute metadata.expected_facts``.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z, in ns

TRACES = [
    {"question": "When was the Eiffel Tower built?", "query": "eiffel tower construction dates",
     "documents": [("eiffel-1", "The Eiffel Tower was built from 1887 to 1889 as the entrance to the 1889 World's Fair.", 0.91,
                    {"source": "wiki/eiffel_tower.md"}),
                   ("paris-2", "Paris is the capital and largest city of France.", 0.34, {"source": "wiki/paris.md"})],
     "answer": "It was built from 1887 to 1889.",
     "expected": {"expected_facts": ["The Eiffel Tower was built from 1887 to 1889"],
                  "expected_response": "The Eiffel Tower was built from 1887 to 1889."}},
    {"question": "Who wrote Hamlet, and when?", "query": "hamlet author date",
     "documents": [("hamlet-1", "Hamlet is a tragedy set in Denmark, about a prince and his revenge.", 0.72,
                    {"source": "wiki/hamlet.md"})],
     "answer": "Hamlet is a Danish tragedy.",
     "expected": {"expected_facts": ["Hamlet was written by William Shakespeare", "Hamlet was written around 1600"],
                  "expected_response": "William Shakespeare wrote Hamlet around 1600."}},
    {"question": "hello", "answer": "Hello! Ask me about landmarks or plays."},
]


def spans() -> list:
    """The finished SDK spans of ``TRACES`` (fixed ids from a seeded generator, fixed times)."""
    from openinference.semconv.trace import (DocumentAttributes, OpenInferenceMimeTypeValues,
                                             OpenInferenceSpanKindValues, SpanAttributes)
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class Seeded(IdGenerator):
        def __init__(self) -> None:
            self.random = random.Random(28)

        def generate_span_id(self) -> int:
            return self.random.getrandbits(64)

        def generate_trace_id(self) -> int:
            return self.random.getrandbits(128)

    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=Seeded(), resource=Resource({"service.name": "rag-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("ragjudge-sample")
    kind, docs = SpanAttributes.OPENINFERENCE_SPAN_KIND, SpanAttributes.RETRIEVAL_DOCUMENTS
    json_mime = OpenInferenceMimeTypeValues.JSON.value
    for number, item in enumerate(TRACES):
        t0 = START + number * 10_000_000_000
        root = tracer.start_span("rag", start_time=t0)
        root.set_attribute(kind, OpenInferenceSpanKindValues.CHAIN.value)
        root.set_attribute(SpanAttributes.INPUT_VALUE, json.dumps({"question": item["question"]}))
        root.set_attribute(SpanAttributes.INPUT_MIME_TYPE, json_mime)
        if "expected" in item:
            root.set_attribute(SpanAttributes.METADATA, json.dumps(item["expected"]))
        if "documents" in item:
            retriever = tracer.start_span("retrieve", context=trace.set_span_in_context(root), start_time=t0 + 1_000_000)
            retriever.set_attribute(kind, OpenInferenceSpanKindValues.RETRIEVER.value)
            retriever.set_attribute(SpanAttributes.INPUT_VALUE, item["query"])
            for n, (doc_id, text, score, metadata) in enumerate(item["documents"]):
                retriever.set_attribute(f"{docs}.{n}.{DocumentAttributes.DOCUMENT_ID}", doc_id)
                retriever.set_attribute(f"{docs}.{n}.{DocumentAttributes.DOCUMENT_CONTENT}", text)
                retriever.set_attribute(f"{docs}.{n}.{DocumentAttributes.DOCUMENT_SCORE}", score)
                retriever.set_attribute(f"{docs}.{n}.{DocumentAttributes.DOCUMENT_METADATA}", json.dumps(metadata))
            retriever.end(end_time=t0 + 40_000_000)
        root.set_attribute(SpanAttributes.OUTPUT_VALUE, json.dumps({"answer": item["answer"]}))
        root.set_attribute(SpanAttributes.OUTPUT_MIME_TYPE, json_mime)
        root.end(end_time=t0 + 900_000_000)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def hex_ids(node):
    """protobuf's JSON (ids base64) -> the Collector's OTLP JSON (ids hex), as its file exporter writes
    them (tests/helpers.py takes it from here)."""
    if isinstance(node, dict):
        return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and v else hex_ids(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [hex_ids(v) for v in node]
    return node


def otlp_lines(finished: list) -> list[str]:
    """One OTLP JSON ``ExportTraceServiceRequest`` per trace (OpenTelemetry's encoder,
    ``encode_spans``, then protobuf's ``MessageToJson``), ids in hex."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    by_trace: dict[int, list] = {}
    for span in finished:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    return [json.dumps(hex_ids(json.loads(MessageToJson(encode_spans(group)))), separators=(",", ":"))
            for group in by_trace.values()]


def main() -> None:
    lines = otlp_lines(spans())
    out = ROOT / "sample_data" / "otlp_traces.jsonl"
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    print(f"wrote {out} ({len(lines)} traces)")


if __name__ == "__main__":
    main()
