"""The scorer's output: each metric's columns and their types (``COMMON_COLUMNS``, ``SCALE_COLUMNS``,
``arrow_type``), and ``Frames``, the ``Scorer``'s part that turns a chunk's verdicts into those
typed columns beside the input's and into the chunk's ``Summary`` (``Scored``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragjudge import audit, diagnosis
from ragjudge.counting import count_row, label_cells, label_passes, metric_summary, rank_ks
from ragjudge import ranking
from ragjudge.gate import Summary
from ragjudge.cascade import STAGE_COLUMNS, stage_label, stage_values
from ragjudge.judges.panel_rule import PANEL_COLUMNS, panel_values
from ragjudge.records import EvalRecord
from ragjudge.settings import Config
from ragjudge.types import OK, Verdict
from ragjudge.judges.base import BINARY
from ragjudge.errors import InputError


# every metric's common columns: suffix -> type
COMMON_COLUMNS = {
    "score": "float64",
    "passed": "bool",
    "rationale": "string",
    "status": "string",
    "error": "string",
    "missing": "list<string>",
    "raw": "string",
    "cached": "bool",
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "cost_usd": "float64",
    "tokens_estimated": "bool",
    "probability": "float64",
}
# a scored metric's (``Judge.kind`` scale) columns beyond the common ones: suffix -> type
SCALE_COLUMNS = {"distribution": "list<float64>", "confidence": "float64"}


def arrow_type(name: str) -> Any:
    """A column type name (``float64``, ``bool``, ``string``, ``int64``, ``list<string>``) as
    pyarrow's: ``ragjudge.io.arrow.arrow_type``, imported on first use (pandas and pyarrow load
    only when a run needs them)."""
    from ragjudge.io.arrow import arrow_type as of_name

    return of_name(name)


def _pandas_array(values: list[Any], kind: str) -> Any:
    import numpy as np
    import pandas as pd

    if kind.startswith("list<"):  # Python lists in an object column: an Arrow list dtype's Parquet metadata is not read back by
        out = np.empty(len(values), dtype=object)  # plain pandas ("data type 'list<item: string>[pyarrow]' not understood")
        out[:] = [list(v) if v is not None else None for v in values]
        return out
    return pd.array(values, dtype={"float64": "Float64", "bool": "boolean", "int64": "Int64", "string": "string"}[kind])


@dataclass
class Scored:
    """What ``Scorer.score`` returns: the scored ``frame`` (the input's rows and index, in
    order, with the output columns), the ``summary`` of these rows (counts, pass rates,
    tokens, cost; ``Summary.merge`` adds several) and ``notes`` for the reader: how cells were
    read, and, when ``score`` resolved the mapping itself, the mapping used, columns replaced
    and sentences removed."""

    frame: Any
    summary: Summary
    notes: list[str] = field(default_factory=list)



# seconds an interrupt (Ctrl-C, SIGTERM: ``Scorer.interrupt``) waits for the requests already sent, so that


class Frames:
    """The ``Scorer``'s output columns, their schema, and the framing of verdicts into them and
    into a ``Summary`` (reads the scorer's ``config``, ``judges`` and ``model``)."""

    config: Config
    judges: list[Any]
    model: Any

    def column_types(self) -> dict[str, str]:
        """Every column ``score`` adds, in order: name -> type name (see ``arrow_type``)."""
        types: dict[str, str] = {}
        for judge in self.judges:
            for suffix, kind in COMMON_COLUMNS.items():
                types[f"{judge.name}_{suffix}"] = kind
            if judge.kind != BINARY:
                for suffix, kind in SCALE_COLUMNS.items():
                    types[f"{judge.name}_{suffix}"] = kind
            if self.config.judge.samples > 1:
                types[f"{judge.name}_agreement"] = "float64"
            if self.config.judge.cascade:
                types[f"{judge.name}_stage"] = "string"
                types[f"{judge.name}_to_label"] = "bool"
                for stage in self.config.judge.cascade:
                    for suffix, kind in STAGE_COLUMNS.items():
                        types[f"{judge.name}_cascade_{stage_label(stage)}_{suffix}"] = kind
            if self.config.judge.panel:
                types[f"{judge.name}_panel_agreement"] = "float64"
                for member in self.config.judge.panel:
                    for suffix, kind in PANEL_COLUMNS.items():
                        types[f"{judge.name}_panel_{member.label}_{suffix}"] = kind
            types.update(judge.columns())
            for name in (ranking.NDCG, ranking.RECALL):  # passage_relevance against per-passage labels
                for k in rank_ks(self.config, judge.name):
                    types[f"{judge.name}_{name}_at_{k}"] = "float64"
        if self._diagnosed():
            types[diagnosis.COLUMN] = "string"
        if self._audited():
            types[audit.COLUMN] = "string"
        types["removed_instructions"] = "list<string>"
        types["judge_model"] = "string"
        return types

    @property
    def judge_model(self) -> str:
        """The judge as the ``judge_model`` column and the summary name it: ``judge.model``, or
        with a panel ``panel: MODEL, MODEL, ...`` (``JudgeSettings.judge_model``)."""
        return self.config.judge.judge_model

    def _audited(self) -> bool:
        """Whether the run judges sufficiency, abstention and completeness: the abstention audit."""
        return set(audit.METRICS) <= {judge.name for judge in self.judges}

    def _diagnosed(self) -> bool:
        names = {judge.name for judge in self.judges}
        return diagnosis.SUFFICIENCY in names and diagnosis.COMPLETENESS in names

    def output_schema(self, input_schema: Any = None) -> Any:
        """The ``pyarrow.Schema`` of the frames ``score`` returns for input of ``input_schema``
        (a ``pyarrow.Schema``, e.g. ``pyarrow.Schema.from_pandas(df, preserve_index=False)``;
        None: no input columns): the input's columns, less those this run replaces, then the
        output columns with their types."""
        import pyarrow as pa

        own = self.column_types()
        fields = [f for f in (input_schema or pa.schema([])) if f.name not in own]
        return pa.schema(fields + [pa.field(name, arrow_type(kind)) for name, kind in own.items()])

    def _scored(self, frame: Any, records: list[EvalRecord], verdicts: list[list[Verdict]], notes: list[str], resolved: bool,
                start: int = 0) -> Scored:
        import pandas as pd

        types = self.column_types()
        columns: dict[str, Any] = {}
        for position, judge in enumerate(self.judges):
            column = [row[position] for row in verdicts]
            name = judge.name
            called = [v.cached is not None for v in column]  # no call was attempted: usage is null
            values: dict[str, list[Any]] = {
                f"{name}_score": [v.score for v in column],
                f"{name}_passed": [v.passed for v in column],
                f"{name}_rationale": [v.rationale for v in column],
                f"{name}_status": [v.status for v in column],
                f"{name}_error": [v.error for v in column],
                f"{name}_missing": [list(v.missing) for v in column],
                f"{name}_raw": [v.raw for v in column],
                f"{name}_cached": [v.cached for v in column],
                f"{name}_prompt_tokens": [v.usage.prompt_tokens if c else None for v, c in zip(column, called)],
                f"{name}_completion_tokens": [v.usage.completion_tokens if c else None for v, c in zip(column, called)],
                f"{name}_cost_usd": [v.usage.cost_usd if c else None for v, c in zip(column, called)],
                f"{name}_tokens_estimated": [v.usage.estimated if c else None for v, c in zip(column, called)],
                f"{name}_probability": [v.probability for v in column],
            }
            if judge.kind != BINARY:
                values[f"{name}_distribution"] = [list(v.distribution) if v.distribution is not None else None for v in column]
                values[f"{name}_confidence"] = [v.confidence for v in column]
            if self.config.judge.samples > 1:
                values[f"{name}_agreement"] = [v.agreement for v in column]
            if self.config.judge.cascade:
                values.update(stage_values(name, [stage_label(stage) for stage in self.config.judge.cascade], column))
            if self.config.judge.panel:
                values.update(panel_values(name, [m.label for m in self.config.judge.panel], column))
            extra = [judge.values(v) for v in column]
            for key in judge.columns():
                values[key] = [item.get(key) for item in extra]
            values.update(self._rank_values(judge.name, frame, records, column, notes))
            for key, items in values.items():
                columns[key] = _pandas_array(items, types[key])
        diagnosed = None
        if self._diagnosed():
            diagnosed = diagnosis.of_frame(pd.DataFrame(columns, index=frame.index), frame)
        if diagnosed is not None:
            columns[diagnosis.COLUMN] = _pandas_array(diagnosed, "string")
        labels = label_passes(frame, self.config, audit.METRICS) if self._audited() else {}
        audited = audit.of_frame(pd.DataFrame(columns, index=frame.index), frame, labels) if self._audited() else None
        if audited is not None:
            columns[audit.COLUMN] = _pandas_array(audited, "string")
        columns["removed_instructions"] = _pandas_array([list(r.removed) for r in records], "list<string>")
        columns["judge_model"] = _pandas_array([self.judge_model] * len(records), "string")
        kept = frame.drop(columns=[c for c in frame.columns if str(c) in types])
        own = pd.DataFrame(columns, index=frame.index)
        out = pd.concat([kept, own], axis=1) if len(kept.columns) else own
        summary = self._summary(records, verdicts, start, frame)
        if diagnosed is not None:
            summary.diagnosis = diagnosis.counts(diagnosed)
        if audited is not None:
            confidence = self.config.gate.app_confidence
            if confidence and confidence not in out.columns:
                raise InputError(f"--app-confidence: the input has no column '{confidence}' (its columns: {', '.join(map(str, frame.columns))})")
            scores = audit.scores_of(out, confidence)
            summary.audit.add(audited, scores)
            audit.add_labelled(summary.audit, pd.DataFrame(columns, index=frame.index), frame, labels, audited)
        notes.extend(dict.fromkeys(note for record in records for note in record.notes))
        if summary.rows_with_removed_instructions and resolved:
            notes.append(removed_note(summary.rows_with_removed_instructions))
        return Scored(out, summary, notes)

    def _rank_values(self, metric: str, frame: Any, records: list[EvalRecord], column: list[Verdict], notes: list[str]) -> dict[str, list[Any]]:
        """``metric``'s nDCG@k and recall@k per row against its per-passage labels (``--labels
        passage_relevance=COL``, ``ragjudge.ranking``), for each k of ``at_k``: null on a row not judged
        ok, unlabelled, or whose label list is not one grade per passage (a note names the first such)."""
        ks = rank_ks(self.config, metric)
        if not ks or frame is None:
            return {}
        cells = [row[0] for row in label_cells(frame, self.config, [metric]) or [[None]] * len(records)]
        out: dict[str, list[Any]] = {f"{metric}_{name}_at_{k}": [] for name in (ranking.NDCG, ranking.RECALL) for k in ks}
        mismatched = []
        for record, verdict, cell in zip(records, column, cells):
            found = None if verdict.status != OK else ranking.grades(cell)
            if found is not None and len(found) != len(record.passages):
                mismatched.append(f"{record.id if record.id is not None else f'row {record.index + 1}'} "
                                  f"({len(found)} grades, {len(record.passages)} passages)")
                found = None
            figures = ranking.figures(found, list(ks)) if found is not None else None
            for name in (ranking.NDCG, ranking.RECALL):
                for k in ks:
                    out[f"{metric}_{name}_at_{k}"].append(None if figures is None else figures[name][k])
        if mismatched:
            notes.append(f"--labels {metric}={self.config.labels[metric]}: {len(mismatched)} row(s) hold a label list that is not one "
                         f"grade per passage, so no nDCG@k or recall@k: {', '.join(mismatched[:5])}")
        return out

    def new_summary(self) -> Summary:
        """An empty ``Summary`` of this scorer's metrics, thresholds and gate settings."""
        config = self.config
        return Summary(
            metrics={j.name: metric_summary(config, j.name, j.threshold, j.version) for j in self.judges},
            judge_model=self.judge_model,
            max_cost=config.judge.max_cost,
            max_diagnosis=dict(config.gate.max_diagnosis),
            cache=config.cache.enabled,
            diagnosis=dict.fromkeys(diagnosis.CELLS, 0) if self._diagnosed() else None,
            allow_undiagnosed=bool({"diagnosis", "*"} & set(config.gate.allow_unjudged)),
            audit=audit.of_config(config)
            if self._audited() or config.gate.max_rate else None,
        )

    def _summary(self, records: list[EvalRecord], verdicts: list[list[Verdict]], start: int = 0, frame: Any = None) -> Summary:
        summary = self.new_summary()
        levels = [judge.level for judge in self.judges]
        labels = None if frame is None else label_cells(frame, self.config, [judge.name for judge in self.judges])
        for i, (record, row) in enumerate(zip(records, verdicts)):  # a trace-level metric counts once per trace, on its first row
            count_row(summary, record.id, start + record.index, row, levels, None if record.trace is None else record.trace.first,
                      None if labels is None else labels[i])
        summary.rows = len(records)
        summary.rows_with_removed_instructions = sum(1 for record in records if record.removed)
        summary.fatal = str(self.model.fatal) if self.model.fatal is not None else None
        summary.interrupted = self.interrupted
        summary.budget_reached = self.model.budget_reached
        return summary


def removed_note(rows: int) -> str:
    """The note for ``rows`` rows that lost sentences addressed to the judge."""
    return (f"{rows} row(s): sentences addressed to the judge were removed from the context or response before "
            "judging (column removed_instructions; judge.strip_instructions: false keeps them)")
