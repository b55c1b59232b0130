"""DataFrame rows -> ``EvalRecord``: column mapping, aliases, dotted paths and normalisation.

Canonical fields: ``id``, ``request``, ``context``, ``expected_facts``,
``expected_response``, ``response``. Each maps to the same-named column, else to one
unambiguous common alias (``ALIASES``), unless the config's ``columns:`` or ``--map`` says
otherwise; a dotted path (``inputs.query``) reads into nested objects, as in MLflow's
evaluation records.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from ragjudge.config import FIELDS, Columns
from ragjudge.errors import InputError
from ragjudge.types import TraceStatus
from ragjudge.injection import strip_instructions

ALIASES: dict[str, tuple[str, ...]] = {  # the first tier: two of them in one table are an error
    "id": (),
    "request": ("question", "query", "input"),
    "context": ("contexts", "retrieved_context", "documents"),
    "expected_facts": (),
    "expected_response": ("ground_truth", "reference", "expected_output"),
    "response": ("answer", "output"),
}
# the second tier, read only when no column of the first is present (ragas, DeepEval, MLflow,
# LangChain and home-made tables name the fields so)
MORE_ALIASES: dict[str, tuple[str, ...]] = {
    "id": (),
    "request": ("user_input", "user_query", "user_question", "question_text", "prompt"),
    "context": ("retrieved_contexts", "retrieval_context", "docs", "chunks", "passages", "retrieved_docs", "retrieved_documents",
                "retrieved_passages", "retrieved_chunks", "source_documents", "context_docs", "search_results", "retrieved_content"),
    "expected_facts": ("facts", "key_facts", "reference_facts", "ground_truth_facts", "expected_claims"),
    "expected_response": ("ground_truths", "gold_answer", "golden_answer", "reference_answer", "expected_answer", "ideal_answer",
                          "reference_response", "gold_response", "target"),
    "response": ("generated_answer", "generated_response", "bot_answer", "bot_response", "actual_output", "model_answer",
                 "model_response", "llm_answer", "llm_response", "prediction", "completion"),
}
PASSAGE_TEXT_KEYS = ("content", "page_content", "text")
PASSAGE_KEEP_KEYS = ("id", "doc_uri", "metadata")
EMPTY_ROW = "empty row: no column holds a value"  # the error of a row with no fields (``{}``, or every cell null), for every metric


@dataclass
class Passage:
    """One retrieved passage: its text and, when the input had them, id / doc_uri / metadata."""

    text: str
    id: Any = None
    doc_uri: Any = None
    metadata: Any = None


@dataclass
class EvalRecord:
    """One evaluation row, normalised. ``context_error`` is set when the context is unusable."""

    index: int
    id: Any = None
    request: str | None = None
    passages: list[Passage] = field(default_factory=list)
    expected_facts: list[str] = field(default_factory=list)
    expected_response: str | None = None
    response: str | None = None
    context_error: str | None = None
    retrieved_nothing: bool = False  # the context is a list with no passage in it: the retriever found nothing
    rank_error: str | None = None  # a context item is null/blank among passages: rank metrics refuse the row (``empty_item_error``)
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how a cell was read, for the run's notes
    extra: dict[str, str | None] = field(default_factory=dict)  # other columns a judge defined in YAML reads, as text  # sentences addressed to the judge, taken out ("passage 2: ...", "response: ...")
    trace: "TraceStatus | None" = None  # the row was read from a trace (``ragjudge.traces``): its statuses
    empty: bool = False  # no column of the row holds a value (``{}``): an input error for every metric (``EMPTY_ROW``)

    @property
    def has_reference(self) -> bool:
        return bool(self.expected_facts) or bool(self.expected_response)


@dataclass(frozen=True)
class Mapping:
    """field -> (column path or None, how it was chosen: 'column', 'alias', 'config', 'flag')."""

    paths: dict[str, str | None]
    origins: dict[str, str]
    warnings: tuple[str, ...] = ()
    unused: tuple[str, ...] = ()  # the input's columns no field reads
    columns: tuple[str, ...] = ()  # every column of the input
    id_like: str | None = None  # the unused column the note on ids suggests for --map id= (``id_like``)

    def suggest(self, name: str, wanted: list[str] | None = None) -> str | None:
        """The unused column to suggest for field ``name`` among the fields ``wanted`` (None:
        ``name`` alone): ``suggestions``; None when no column is left for it."""
        return self.suggestions(wanted or [name]).get(name)

    def suggestions(self, wanted: list[str]) -> dict[str, str]:
        """field -> the unused column to suggest for it, for the fields ``wanted`` (those the
        run's hints name), one column for one field at most: so that following every hint never
        makes two fields read one column (a context judged against itself as its ground truth).
        The column the note on ids names (``id_like``) is left out; the fields are matched by
        the name likeness (difflib's ratio) of a column to the field or one of its aliases, the
        likeliest pair first; a field left without a column gets no suggestion."""
        import difflib

        def plain(text: str) -> str:
            return "".join(ch if ch.isalnum() else "_" for ch in text.lower())

        free = [column for column in self.unused if column != self.id_like]
        pairs = sorted(((max(difflib.SequenceMatcher(None, plain(column), plain(n)).ratio()
                             for n in (name, *ALIASES[name], *MORE_ALIASES[name])), -FIELDS.index(name), -i, name, column)
                        for name in dict.fromkeys(wanted) for i, column in enumerate(free)), reverse=True)
        chosen: dict[str, str] = {}
        for *_, name, column in pairs:
            if name not in chosen and column not in chosen.values():
                chosen[name] = column
        return chosen

    def hint(self, name: str, wanted: list[str] | None = None) -> str:
        """What to do about field ``name`` being unmapped: the unused columns and the one
        suggested for it among the fields ``wanted`` (every field the run's hints name; None:
        ``name`` alone; ``suggestions``: no column is suggested for two of them)."""
        if len(self.columns) == 1:  # a CSV saved with another separator reads as one column named by the whole header
            sep = next((s for s in (";", "\t", "|") if s in self.columns[0]), None)
            if sep is not None:
                shown = {";": "semicolons", "\t": "tabs", "|": "'|'"}[sep]
                return (f"; the input has one column, {self.columns[0]!r}: a header separated by {shown}. CSV is read separated by "
                        "commas: save the file comma-separated (pandas: df.to_csv(path, index=False); a spreadsheet: 'CSV, comma "
                        "delimited'), or as JSON Lines")
        column = self.suggest(name, wanted)
        if not self.unused:
            return "; every column of the input is already read for another field"
        if column is None:  # each column not read is the likelier one for another field
            return f"; columns not read: {', '.join(self.unused)}; set --map {name}=COLUMN (or columns.{name} in the config)"
        return f"; columns not read: {', '.join(self.unused)}; if {column!r} holds it, set --map {name}={column} (or columns.{name} in the config)"

    def describe(self) -> str:
        parts = []
        for name in FIELDS:
            path = self.paths.get(name)
            if path is None:
                parts.append(f"{name}=(none)")
            elif path == name and self.origins.get(name) == "column":
                parts.append(f"{name}")
            else:
                parts.append(f"{name}={path}")
        return "columns: " + ", ".join(parts)


def is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    # pandas not imported yet, or being imported by another thread (a JSON Lines run's first rows): no value is its NA
    pd = sys.modules.get("pandas")
    na, nat = getattr(pd, "NA", None), getattr(pd, "NaT", None)
    return na is not None and (value is na or value is nat)


def _lookup(row: dict[str, Any], path: str) -> Any:
    if path in row:
        return row[path]
    head, _, rest = path.partition(".")
    value = row.get(head)
    while rest:
        if is_missing(value):
            return None
        if isinstance(value, str) and value.lstrip().startswith("{"):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                return None
        if not isinstance(value, dict):
            return None
        key, _, rest = rest.partition(".")
        value = value.get(key)
    return value


def resolve_mapping(
    columns: list[str],
    sample: list[dict[str, Any]],
    configured: Columns,
    flag_fields: frozenset[str] = frozenset(),
    source: str = "input",
) -> Mapping:
    """Choose the column (or dotted path) for each canonical field.

    ``columns``: the input's column names; ``sample``: some rows (to check dotted paths);
    ``configured``: explicit mapping; ``flag_fields``: which of those came from ``--map``.
    Raises ``InputError`` (exit 2) for a mapped column that does not exist, listing the
    available columns and the key or flag to set, and for an ambiguous alias. A dotted
    path whose top-level column exists but which is empty in every sampled row is a
    warning (MLflow records often carry only some expectations).
    """
    available = ", ".join(map(str, columns)) or "(no columns)"
    paths: dict[str, str | None] = {}
    origins: dict[str, str] = {}
    warnings: list[str] = []
    for name in FIELDS:
        explicit = getattr(configured, name)
        if explicit:
            how = f"--map {name}=COLUMN" if name in flag_fields else f"columns.{name} in the config"
            head = explicit.split(".", 1)[0]
            if explicit not in columns and head not in columns:
                # a column named in another case (--map context=Context for 'context'): name it, the closest fix
                same = [str(c) for c in columns if str(c).casefold() in (explicit.casefold(), head.casefold())]
                hint = f"did you mean '{same[0]}{explicit[len(head):] if same[0].casefold() == head.casefold() else ''}'? (column names are case-sensitive); " if same else ""
                raise InputError(
                    f"column '{explicit}' (for {name}) not found in {source}; {hint}available: {available}; "
                    f"set {how}"
                )
            if explicit not in columns and "." in explicit and sample:
                if all(is_missing(_lookup(row, explicit)) for row in sample):
                    keys = sorted({k for row in sample for k in _keys_at(row, explicit)})
                    parent, leaf = explicit.rsplit(".", 1)
                    if leaf in keys:  # the key is there, empty: say so rather than list it as if it were not
                        warnings.append(f"note: '{explicit}' (for {name}) is null or empty in each of the first {len(sample)} rows")
                    else:
                        warnings.append(
                            f"note: '{explicit}' (for {name}) has no value in the first {len(sample)} rows "
                            f"(keys seen under '{parent}': {', '.join(keys) or 'none'})"
                            + (f"; the request is read from '{parent}' as MLflow reads inputs: its one key's value, or the JSON "
                               "text of its keys" if name == "request" and keys else "")
                        )
            paths[name] = explicit
            origins[name] = "flag" if name in flag_fields else "config"
            continue
        if name in columns:
            paths[name], origins[name] = name, "column"
            continue
        found: list[str] = []
        for tier in (ALIASES[name], MORE_ALIASES[name]):
            found = [alias for alias in tier if alias in columns]
            if found:
                break
        if len(found) > 1:
            raise InputError(
                f"columns {', '.join(repr(a) for a in found)} in {source} could each be the {name}; "
                f"choose one with --map {name}=COLUMN or columns.{name} in the config"
            )
        paths[name] = found[0] if found else None
        origins[name] = "alias" if found else "none"
    used = {path.split(".", 1)[0] for path in paths.values() if path} | {path for path in paths.values() if path}
    unused = tuple(c for c in columns if c not in used)
    named = None
    if paths.get("id") is None:
        named = id_like(unused, sample)
        if named is not None:
            warnings.append(f"note: no id column; '{named}' looks like one (a different value in each row): set --map id={named} "
                            "(or columns.id in the config) to name the rows by it; reports call them row 1, row 2 ... otherwise")
    warnings += shared_column_notes(paths, origins)
    return Mapping(paths, origins, tuple(warnings), unused, tuple(columns), named)


def shared_column_notes(paths: dict[str, str | None], origins: dict[str, str]) -> list[str]:
    """A warning for each column (or dotted path) that two or more fields read (``paths``:
    field -> column; ``origins``: how each was chosen): a context read as the ground truth too
    is judged against itself (sufficiency 1.00), a response read as the ground truth is complete
    by construction. The run goes on: a table may mean it (the id read as the request, say)."""
    readers: dict[str, list[str]] = {}
    for name in FIELDS:
        if paths.get(name):
            readers.setdefault(str(paths[name]), []).append(name)
    notes = []
    for column, names in readers.items():
        if len(names) > 1:
            how = ", ".join(f"{name} ({_ORIGIN_WORDS.get(origins.get(name, ''), origins.get(name, ''))})" for name in names)
            notes.append(f"warning: {' and '.join(names)} {'both' if len(names) == 2 else 'all'} read the column '{column}': {how}; a judge that compares them "
                         "compares the column with itself (a context read as its own ground truth is sufficient by construction): "
                         "map each field to its own column (--map FIELD=COLUMN, or columns: in the config)")
    return notes


_ORIGIN_WORDS = {"flag": "--map", "config": "columns: in the config", "column": "its own name", "alias": "an alias"}


_ID_NAME = re.compile(r"^(?:[a-z]?id|ids?|uuid|guid|key|idx|.+[_\- .]id|id[_\- .].+|(?:row|example|sample|question|query|item|record|case|doc)_?(?:id|key|no|num|number|index))$")
_CAMEL_ID = re.compile(r"[a-z0-9](?:Id|ID)$")  # rowId, exampleID


def id_like(columns: tuple[str, ...] | list[str], sample: list[dict[str, Any]]) -> str | None:
    """The first of ``columns`` whose name says it is an id (``qid``, ``question_id``,
    ``example_id``, ``uuid``, ``rowId``...) and whose values in ``sample`` are all present and
    different; None when none is."""
    for column in columns:
        if not (_ID_NAME.match(str(column).lower()) or _CAMEL_ID.search(str(column))):
            continue
        values = [row.get(column) for row in sample]
        if values and not any(is_missing(v) for v in values) and len({str(v) for v in values}) == len(values):
            return str(column)
    return None


def _keys_at(row: dict[str, Any], path: str) -> list[str]:
    parent = path.rsplit(".", 1)[0]
    value = _lookup(row, parent)
    return [str(k) for k in value] if isinstance(value, dict) else []


def _text(value: Any) -> str | None:
    """A field's value as the judge reads it: strings as they are, a list one item per line,
    an object as JSON (not Python's repr), anything else ``str``; None when empty."""
    if is_missing(value):
        return None
    if isinstance(value, (bytes, bytearray)):  # a Parquet binary column: its text, not b'...'
        value = bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, dict):
        return _json_text(value)
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        items = value.tolist() if hasattr(value, "tolist") else list(value)
        lines = (_json_text(v) if isinstance(v, dict) else str(v) for v in items if not is_missing(v))
        joined = "\n".join(line for line in lines if line.strip())
        return joined or None
    return str(value)


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _as_list(value: Any) -> list[Any] | None:
    """A list from a list, a numpy array, or a list encoded in a string: JSON, or a Python
    literal as ``DataFrame.to_csv`` writes one (``['a', 'b']``; read by ``ast.literal_eval``,
    never evaluated). None for anything else."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            decoded = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            decoded = _literal(value)
        if isinstance(decoded, list):
            return decoded
    return None


def _literal(text: str) -> Any:
    """A Python list literal (pandas' CSV form of a list cell) read safely, else None."""
    import ast

    stripped = text.strip()
    if not stripped.endswith("]"):
        return None
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _looks_like_list(value: Any) -> bool:
    return isinstance(value, str) and value.strip().startswith("[") and value.strip().endswith("]")


TABLE_TEXT_FIX = "fill in their text, or map context to the column that has it"


def empty_item_error(position: int) -> str:
    """The rank metrics' row error for a context whose item ``position`` (from 1) is null or blank:
    dropping it would shift every later passage's rank (``EvalRecord.rank_error``)."""
    return (f"context item {position} is empty (null or blank text); a rank metric counts the retriever's positions, "
            "so remove the item from the list or fill in its text")


def _not_text(position: int, value: Any) -> str:
    return f"context item {position} has no text: {type(value).__name__} {_json_text(value)[:60]}; a passage is a string or an object with text under {', '.join(PASSAGE_TEXT_KEYS)}"


def normalise_context(value: Any, notes: list[str] | None = None, fix: str = TABLE_TEXT_FIX,
                      empties: list[int] | None = None, text_only: bool = False) -> tuple[list[Passage], str | None]:
    """Context -> (passages, error). Accepts a string, a list of strings, a list of objects
    with the text under ``content``/``page_content``/``text`` (id/doc_uri/metadata kept),
    or such a list encoded in a string (JSON, or a Python literal as pandas writes lists to
    CSV). An object that holds no text under those keys but holds text under others becomes
    one passage holding its JSON text (as MLflow judges ``str(context)``), and a note naming
    its keys is appended to ``notes``: nothing is silent and nothing is lost. An object whose
    other keys hold no text at all (a score, a flag) is an error naming its keys. ``fix``: what
    the error for passage objects none of which has text tells the user to do (a table's
    column, by default; a trace reader names the retriever instead). With ``text_only`` (a
    table's rows) a number, a flag or a list where a passage's text should be is an error
    naming the item, else it is read as its text (a trace reader's own rules). ``empties``: the positions
    (from 1) of null or blank items are appended to it (they are left out of the passages)."""
    if is_missing(value):
        return [], None
    items = _as_list(value)
    if items is None:
        if isinstance(value, str) and value.lstrip().startswith("{"):  # one object, as JSON text
            try:
                decoded = json.loads(value)
            except (json.JSONDecodeError, RecursionError):
                decoded = None
            value = decoded if isinstance(decoded, dict) else value
        if isinstance(value, dict):
            items = [value]
        elif isinstance(value, (str, bytes, bytearray)) or not text_only:
            text = _text(value)
            return ([Passage(text)] if text else []), None
        else:
            return [], _not_text(1, value)
    passages: list[Passage] = []
    textless = 0  # objects whose text is null or blank
    for position, item in enumerate(items, start=1):
        if is_missing(item) or (isinstance(item, str) and not item.strip()):
            if empties is not None:
                empties.append(position)
            continue
        if isinstance(item, dict):
            # Parquet gives every item the fields of all of them, null where an item had none:
            # only fields holding a value count, so that a {"body": ...} item is the same error
            # whatever the input format, and a null "content" does not hide a "page_content"
            held = [k for k, v in item.items() if not is_missing(v) and not (isinstance(v, str) and not v.strip())]
            key = next((k for k in PASSAGE_TEXT_KEYS if k in held), None)
            if key is None:
                unknown = [k for k in held if k not in PASSAGE_KEEP_KEYS]
                if not unknown:
                    textless += 1
                    if empties is not None:
                        empties.append(position)
                    continue  # an empty passage
                if not any(_holds_text(item[k]) for k in unknown):  # a score, a flag: nothing a judge could read
                    return [], (
                        f"context item {position} has no text under {', '.join(PASSAGE_TEXT_KEYS)}; "
                        f"keys found: {', '.join(map(str, held))}"
                    )
                if notes is not None:
                    notes.append(f"note: a context item has no text under {', '.join(PASSAGE_TEXT_KEYS)} (keys: {', '.join(map(str, held))}); "
                                 "it was judged as its JSON text, one passage")
                passages.append(Passage(_json_text({k: item[k] for k in held}), item.get("id"), item.get("doc_uri"), item.get("metadata")))
                continue
            if text_only and not isinstance(item[key], (str, bytes, bytearray)):
                return [], _not_text(position, item[key])
            if text := _text(item[key]):
                passages.append(Passage(text, item.get("id"), item.get("doc_uri"), item.get("metadata")))
        elif isinstance(item, (str, bytes, bytearray)) or not text_only:
            if text := _text(item):
                passages.append(Passage(text))
        else:
            return [], _not_text(position, item)
    if not passages and textless:
        # passage objects, none with text: a text field left null when the table was written,
        # not a retrieval that found nothing (an empty list, which is judged "no")
        return [], (f"context holds {textless} passage(s) and none has text under "
                    f"{', '.join(PASSAGE_TEXT_KEYS)}; {fix}")
    return passages, None


def _holds_text(value: Any) -> bool:
    """Whether ``value`` is, or holds (in an object or a list), a non-blank string."""
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, dict):
        return any(_holds_text(v) for v in value.values())
    if isinstance(value, (list, tuple)) or (hasattr(value, "tolist") and not isinstance(value, (bytes, bytearray))):
        return any(_holds_text(v) for v in (value.tolist() if hasattr(value, "tolist") else value))
    return False


def normalise_facts(value: Any) -> list[str]:
    """Expected facts -> list of non-empty strings; a plain string is one fact."""
    if is_missing(value):
        return []
    items = _as_list(value)
    if items is None:
        text = _text(value)
        return [text] if text else []
    return [t for t in (_text(i) for i in items) if t]


def to_records(rows: list[dict[str, Any]], mapping: Mapping, start: int = 0, strip_instructions: bool = False,
               extra: tuple[str, ...] = (), trace_of: Callable[[dict[str, Any]], TraceStatus | None] | None = None) -> list[EvalRecord]:
    """Build one ``EvalRecord`` per row (``index`` counts from ``start``), never dropping a row.
    ``extra``: other columns (or dotted paths) to keep as text in ``EvalRecord.extra``.
    ``trace_of(row)``: the row's ``TraceStatus`` when it was read from a trace (the trace
    source's reading of its own columns, ``ragjudge.traces.spans.trace_status``), else None. With
    ``strip_instructions`` each passage, the response and the extra columns lose their
    sentences addressed to the judge (``ragjudge.injection``), listed in ``EvalRecord.removed``."""
    records = []
    for offset, row in enumerate(rows):
        get = {name: (_lookup(row, path) if path else None) for name, path in mapping.paths.items()}
        notes: list[str] = []
        empties: list[int] = []
        passages, context_error = normalise_context(get["context"], notes, empties=empties, text_only=True)
        request = get["request"]
        if request is None and mapping.paths.get("request") and "." in str(mapping.paths["request"]):  # MLflow's inputs
            request = _lookup(row, str(mapping.paths["request"]).rsplit(".", 1)[0])  # without the key named: the one-key rule
            request = request if isinstance(request, dict) else None
        ident = get["id"]
        notes += [f"column '{mapping.paths[name]}' (for {name}) holds text that looks like a list but is neither JSON nor a Python list; "
                  "it was read as one piece of text" for name in ("context", "expected_facts") if _looks_like_list(get[name]) and _as_list(get[name]) is None]
        records.append(
            EvalRecord(
                index=start + offset,
                id=None if is_missing(ident) else ident,
                request=_text(request_text(request)),
                passages=passages,
                expected_facts=normalise_facts(get["expected_facts"]),
                expected_response=_text(get["expected_response"]),
                response=_text(response_text(get["response"])),
                context_error=context_error,
                retrieved_nothing=not passages and not context_error and _as_list(get["context"]) is not None,
                rank_error=empty_item_error(empties[0]) if empties and passages else None,
                notes=notes,
                extra={name: _text(_lookup(row, name)) for name in extra},
                trace=None if trace_of is None else trace_of(row),
                empty=all(is_missing(value) for value in row.values()),
            )
        )
        if strip_instructions:
            _strip(records[-1])
    return records


def request_text(value: Any) -> Any:
    """MLflow's request rule: an object (``inputs``) with one key is that key's value; with
    several, it stays an object (read as its JSON text); a list of chat messages is its last
    message's text. Anything else as it is."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    messages = _as_list(value) if not isinstance(value, dict) else None
    if messages and all(isinstance(m, dict) and "role" in m for m in messages):  # chat messages: the last one's text, as MLflow reads them
        content = messages[-1].get("content")
        return content if isinstance(content, str) else value
    return value


def response_text(value: Any) -> Any:
    """A response given as a list of chat messages (``[{"role", "content"}, ...]``, or an object
    holding one under ``messages``) -> the content of its final assistant message, as Azure
    takes the assistant's reply; anything else as it is."""
    messages = value.get("messages") if isinstance(value, dict) and set(value) == {"messages"} else _as_list(value)
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) and "role" in m for m in messages):
        return value
    replies = [m for m in messages if m.get("role") == "assistant"]
    if not replies:
        return None
    content = replies[-1].get("content")
    if isinstance(content, list):  # content parts: their text
        content = "\n".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return content


REMOVED_PLACEHOLDER = "[removed: text addressed to the judge]"


def _strip(record: EvalRecord) -> None:
    """Take the sentences addressed to the judge out of the passages and the response. A text
    that was nothing else becomes ``REMOVED_PLACEHOLDER``, so the judge still sees that it
    holds no evidence (rather than the row being skipped). Each removed sentence is listed
    with where it was: ``passage N: ...`` (N counts the row's passages from 1, as the
    prompt numbers them) or ``response: ...``."""
    for number, passage in enumerate(record.passages, 1):
        found = strip_instructions(passage.text)
        passage.text = found.text if found.text.strip() else REMOVED_PLACEHOLDER
        record.removed.extend(f"passage {number}: {sentence}" for sentence in found.removed)
    if record.response:
        found = strip_instructions(record.response)
        record.response = found.text if found.text.strip() else REMOVED_PLACEHOLDER
        record.removed.extend(f"response: {sentence}" for sentence in found.removed)
    for name, text in record.extra.items():
        if text:
            found = strip_instructions(text)
            record.extra[name] = found.text if found.text.strip() else REMOVED_PLACEHOLDER
            record.removed.extend(f"{name}: {sentence}" for sentence in found.removed)
