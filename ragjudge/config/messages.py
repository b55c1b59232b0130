"""Merging a config's keys (``_deep_merge``) and the message of a bad one (``_describe``): its
key as the config writes it, pydantic's union branches left out, named where it was set (the
file, ``--set KEY``, the option). Part of ``ragjudge.config``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import (
    ValidationError,
)

from ragjudge.config.base import BadEntry

def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out

# the name pydantic gives a union's branch in an error's location (gate.max_error_rate.float, ...dict[str,float].completeness)
_BRANCH = re.compile(r"(float|int|str|bool|none|dict|list|tuple|set|decimal|function-[a-z-]+|constrained-[a-z-]+|lax-[a-z-]+|json-or-python)(\[.*\])?")

def _keys(data: Any, loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], int | None]:
    """An error's location as the config's keys, the union branches pydantic names in it left
    out (``gate.max_error_rate.float`` is ``gate.max_error_rate``), and the position of the first
    branch left out (None: none). ``data``: the values validated (a key of theirs is a key,
    whatever its name)."""
    out: list[Any] = []
    branch = None
    node = data
    for position, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            node = node[part]
        elif isinstance(part, str) and _BRANCH.fullmatch(part):
            branch = position if branch is None else branch
            continue
        else:
            node = None
        out.append(part)
    return tuple(out), branch

def _shown(err: ValidationError, data: Any) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The error a message shows and its location as the config's keys (``_keys``): the first,
    except that where every branch of a union failed, the branch that reached furthest into the
    value given (``{completeness: x}``: its entry, not "should be a valid number")."""
    errors = err.errors()
    first = errors[0]
    loc, branch = _keys(data, tuple(first["loc"]))
    if branch is not None:
        for other in errors[1:]:
            keys, at = _keys(data, tuple(other["loc"]))
            if at == branch and tuple(other["loc"])[:branch] == tuple(first["loc"])[:branch] and len(keys) > len(loc):
                first, loc = other, keys
    return first, loc

def _where(loc: tuple[Any, ...]) -> str:
    """A validation error's location as the config's keys: ``metrics item 2``, ``judge.timeout``."""
    text = ""
    for part in loc:
        text += f" item {part + 1}" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text

def _has(data: Any, loc: tuple[Any, ...]) -> bool:
    for part in loc:
        if isinstance(part, int):
            return True
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True

def _describe(err: ValidationError, source: str, overrides: dict[str, Any] | None = None, flags: dict[str, str] | None = None, *,
              data: Any = None, setter: Callable[[str], str | None] | None = None) -> str:
    """One line for the first validation error: the key (or what set it), what it should be and
    what it was; no internal paths, no union branch (``data``: the values validated). An unknown
    key is named with every other unknown key set in the same place (the file, or the same
    option), so that each typo is found in one run. What set
    it: ``setter`` (dotted key -> the option, or ``--set KEY``, that set it; None for the file
    or a default), else ``flags`` (dotted key -> option) for a key that ``overrides`` gives."""
    first, loc = _shown(err, data)
    entry = first.get("ctx", {}).get("error") if first["type"] == "value_error" else None
    detail = None
    if isinstance(entry, BadEntry):  # a check's error about one entry below its place: named at that entry
        loc, detail = loc + entry.keys, entry.detail
    where = _where(loc)
    prefix = "" if source == "options" else f"{source}: "

    def set_by(loc: tuple[Any, ...]) -> str | None:
        dotted = ".".join(str(p) for p in loc if not isinstance(p, int))
        if setter is not None and dotted:
            return setter(dotted)
        if flags and dotted in flags and overrides is not None and _has(overrides, loc):
            return flags[dotted]
        return None

    by = set_by(loc)
    if first["type"] == "extra_forbidden":  # every unknown key set in the same place, in one message: each typo in one run
        unknown = [where, *(_where(keys) for keys in (_keys(data, tuple(other["loc"]))[0] for other in err.errors()[1:]
                                                      if other["type"] == "extra_forbidden") if set_by(keys) == by)]
        unknown = list(dict.fromkeys(unknown))
        return (f"{f'{by}: ' if by else prefix}unknown key{'s' if len(unknown) > 1 else ''} {', '.join(repr(k) for k in unknown)}; "
                "`ragjudge config show` lists every key")
    message = str(first["msg"]).removeprefix("Value error, ")
    if not first["loc"]:  # a check across keys: its message names what it is about
        return f"{by}: {message}" if by else prefix + message
    if first["type"] == "string_pattern_mismatch":
        wanted = str((first.get("ctx") or {}).get("pattern", ""))
        message = "should be lower-case letters, digits and _ only" if wanted == "^[a-z0-9_]+$" else "should not be empty or blank"
    message = message.replace("Input should be", "should be").replace("String should", "should")
    given = first.get("input")
    got = f" (got {given!r})" if isinstance(given, (str, int, float, bool)) or given is None else ""
    if by is not None:  # --set KEY names the entry itself; an option its value as given (--min-pass-rate: completeness: 2.0 ...)
        said = detail if detail is not None and by.startswith('--set ') else message
        return f"{by}: {said}{'' if repr(given) in said else got}"  # a message that names the value already: once
    said = detail if detail is not None else message
    return f"{prefix}invalid value for '{where}': {said}{'' if repr(given) in said else got}"
