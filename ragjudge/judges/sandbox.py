"""A resource-metered Jinja2 sandbox: templates rendered under limits on loops, calls, value
sizes, work and time, whatever the template or its values.

A template written by a user runs once per row, inside the scoring process, so every render
is held to the limits below (``MAX_*``): for-loops nested at most ``MAX_LOOP_DEPTH`` deep and
never recursive (checked when a template is compiled), ``range()`` of at most ``MAX_RANGE``
numbers, no loop over a text's characters (``Text``), and a budget per render of loop
iterations and calls, of the size of any one value (``'x' * 10**9`` is refused before it is
made) and of all the characters handled, within ``MAX_SECONDS``. Any limit passed raises
``TemplateLimitError``.

The module knows nothing of judging: ``compile_template`` (the metered template),
``render`` (one render under a fresh budget) and ``variables`` (the names a template reads)
are its interface; ``ragjudge.judges.custom`` builds judges on it. The ``name`` and ``what``
arguments only name the template in error messages.

This module is over 500 lines for a reason: the limits are one design (a budget counted by
every operator, call, filter, literal and loop), and splitting it would spread the size
estimates away from the operations they guard.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, ItemsView, Iterator, KeysView, ValuesView
from contextvars import ContextVar
from functools import lru_cache, wraps
from string import Formatter
from typing import Any

from jinja2 import StrictUndefined, meta, nodes
from jinja2.exceptions import SecurityError, TemplateSyntaxError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace, pass_context
from jinja2.visitor import NodeTransformer

# -- limits ----------------------------------------------------------------------------------
# A template runs once per row, in the scoring process: these keep every render small and
# quick, whatever the template or the row. Sensible templates stay far below them.
MAX_LOOP_DEPTH = 2  # for-loops nested in the template's text (checked when the config loads)
MAX_RANGE = 1_000  # numbers one range() may give
MAX_STEPS = 20_000  # loop iterations and calls (macros, methods) in one render
MAX_VALUE = 10_000_000  # size of any one value a template makes or prints: characters, ITEM_COST per item of a list
MAX_WORK = 50_000_000  # size of what the operations of one render handle, output included
MAX_INT_BITS = 10_000  # size of a whole number a template computes (about 3,000 digits)
MAX_SECONDS = 2.0  # CPU time of one render (its thread's), whatever the counts above let through
PRINTED = 10  # the most characters repr() writes for one (a non-printable character: '\\U000e0001')
ITEM_COST = 100  # an item of a list or dict counts as this many characters (templates handle items in Python, slowly)
_PER_UNIT = f"(a character counts 1, an item of a list {ITEM_COST})"


class TemplateLimitError(SecurityError):
    """A template went past one of the limits above (``MAX_*``)."""


class Text(str):
    """A field's text as a template sees it: a ``str`` in every way except that it cannot be
    looped over character by character (four nested loops over a response's characters would
    run for ever). Raises ``TemplateLimitError`` when iterated."""

    __slots__ = ()

    def __iter__(self) -> Any:
        raise TemplateLimitError("a text field cannot be looped over character by character; use it whole, or loop over "
                                 "its words or lines (response.split(), response.splitlines())")


class _Budget:
    """What one render has used: ``steps`` (loop iterations and calls) and ``work``
    (characters and items handled)."""

    __slots__ = ("steps", "work", "deadline")

    def __init__(self) -> None:
        self.steps = 0
        self.work = 0
        # the render's own CPU time (time.thread_time), not the wall clock: on a loaded machine
        # a render waits for the CPU, and a template's verdict must not depend on the machine's load
        self.deadline = time.thread_time() + MAX_SECONDS

    def _clock(self) -> None:
        if time.thread_time() > self.deadline:
            raise TemplateLimitError(f"the template takes more than {MAX_SECONDS:g} s of CPU to render")

    def step(self) -> None:
        """Count one loop iteration, call or item drawn through a filter. Raises
        ``TemplateLimitError`` past ``MAX_STEPS`` or ``MAX_SECONDS``."""
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise TemplateLimitError(f"the template runs more than {MAX_STEPS:,} loop iterations and calls")
        self._clock()

    def spend(self, units: int) -> None:
        """Count ``units`` (characters; ``ITEM_COST`` per item) handled. Raises ``TemplateLimitError`` past
        ``MAX_WORK`` or ``MAX_SECONDS``."""
        self.work += units
        if self.work > MAX_WORK:
            raise TemplateLimitError(f"the template handles more than {MAX_WORK:,} characters {_PER_UNIT}")
        self._clock()


_BUDGET: ContextVar[_Budget | None] = ContextVar("ragjudge_template_budget", default=None)


def _budget() -> _Budget:
    # outside ``_render`` (a template rendered by other code) each operation gets its own
    return _BUDGET.get() or _Budget()


def _weight(value: Any, memo: dict[int, int] | None = None) -> int:
    """The size of ``value``, what it costs to write it out or go through it: the characters of
    a text; for a container ``ITEM_COST`` per item plus the size of each, through its nested
    containers (one shared many times counts each time; counting stops soon after
    ``MAX_VALUE``). Raises ``RecursionError`` for containers nested beyond Python's depth."""
    kind = type(value)
    if kind is Text or kind is str:
        return len(value)
    if kind is int or kind is float or kind is bool or value is None:
        return 1
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, Namespace):
        value = object.__getattribute__(value, "_Namespace__attrs")
    if isinstance(value, dict):
        items: Any = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple, set, frozenset, KeysView, ValuesView, ItemsView)):
        items = value
    else:
        return 1
    memo = {} if memo is None else memo
    key = id(value)
    if key in memo:
        return memo[key]
    memo[key] = ITEM_COST  # a container that holds itself counts once
    total = ITEM_COST
    for item in items:
        total += ITEM_COST + _weight(item, memo)
        if total > MAX_VALUE:
            break
    memo[key] = total
    return total


def _cap(size: int, what: str) -> None:
    """Raises ``TemplateLimitError`` when ``what`` would make a value over ``MAX_VALUE``."""
    if size > MAX_VALUE:
        raise TemplateLimitError(f"{what} would make a value of size {size:,}, over the limit of {MAX_VALUE:,} {_PER_UNIT}")


def _whole(value: Any) -> int:
    """``value`` when it is a whole number (not a bool), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text_len(value: Any) -> int:
    return len(value) if isinstance(value, str) else _weight(value)


_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?[a-zA-Z%]")


def _digits(text: str) -> int:
    return int(text) if len(text) <= 12 else 10**12


def _printf_size(fmt: Any, args: Any) -> int:
    """The most ``fmt % args`` can write: the format, each conversion as wide as the widest
    argument, the widths and precisions it names or takes from ``args``."""
    if not isinstance(fmt, str):
        return 0
    values = list(args.values()) if isinstance(args, dict) else (list(args) if isinstance(args, tuple) else [args])
    widest = max((_weight(v) for v in values), default=0)
    size, stars = len(fmt), False
    for match in _PRINTF.finditer(fmt):
        for group in match.groups():
            if group == "*":
                stars = True
            elif group:
                size += _digits(group)
        size += widest
    if stars:
        size += sum(abs(_whole(v)) for v in values)
    return size


def _format_size(fmt: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """The most ``fmt.format(*args, **kwargs)`` can write (as ``_printf_size``)."""
    values = [*args, *kwargs.values()]
    widest = max((_weight(v) for v in values), default=0)
    size = len(fmt)
    for _, field, spec, _ in Formatter().parse(fmt):
        if field is None:
            continue
        size += widest + sum(_digits(d) for d in re.findall(r"\d+", spec or ""))
        if spec and "{" in spec:
            size += sum(abs(_whole(v)) for v in values)
    return size


def _replace_size(s: Any, old: Any, new: Any, count: Any = None) -> int:
    if not (isinstance(s, str) and isinstance(old, str) and isinstance(new, str)):
        return _text_len(s)
    times = s.count(old) if old else len(s) + 1
    if _whole(count) > 0 or count == 0:
        times = min(times, _whole(count))
    return len(s) + times * max(0, len(new) - len(old))


def _join_size(items: list[Any], separator: Any) -> int:
    return sum(_weight(item) for item in items) + _text_len(separator) * max(0, len(items) - 1)


# filters that go through their text in Python, a character at a time or nearly: what they are
# given counts this many times
_SLOW = {"wordwrap": 20, "urlize": 20, "title": 5, "urlencode": 5}


# the most a filter or a str method can write, from its arguments (those that can make a
# value much larger than their input); the arguments as the filter takes them
_FILTER_SIZES: dict[str, Callable[..., int]] = {
    "center": lambda value, width=80: max(_text_len(value), _whole(width)),
    "indent": lambda s, width=4, first=False, blank=False: _text_len(s) + (
        (s.count("\n") + 1 if isinstance(s, str) else 1) * (_whole(width) or _text_len(width))),
    "replace": lambda s, old, new, count=None: _replace_size(s, old, new, count),
    "join": lambda value, d="", attribute=None: _join_size(value, d),
    "format": lambda value, *args, **kwargs: _printf_size(value, kwargs or args),
    "batch": lambda value, linecount, fill_with=None: _weight(value) + (
        _whole(linecount) * (ITEM_COST + _weight(fill_with)) if fill_with is not None else 0),
    "slice": lambda value, slices, fill_with=None: _weight(value) + _whole(slices) * (ITEM_COST + _weight(fill_with)),
    "urlize": lambda value, trim_url_limit=None, nofollow=False, target=None, rel=None, extra_schemes=None: _text_len(value) * (
        2 + _text_len(target or "") + _text_len(rel or "")),
    "wordwrap": lambda s, width=79, break_long_words=True, wrapstring=None, break_on_hyphens=True: _text_len(s) + (
        _text_len(s) // max(1, _whole(width)) + (s.count("\n") if isinstance(s, str) else 0) + 1) * _text_len(wrapstring or "\n"),
}
_METHOD_SIZES: dict[str, Callable[..., int]] = {
    "center": lambda s, width, fillchar=" ": max(len(s), _whole(width)),
    "ljust": lambda s, width, fillchar=" ": max(len(s), _whole(width)),
    "rjust": lambda s, width, fillchar=" ": max(len(s), _whole(width)),
    "zfill": lambda s, width: max(len(s), _whole(width)),
    "expandtabs": lambda s, tabsize=8: len(s) + s.count("\t") * _whole(tabsize),
    "replace": lambda s, old, new, count=-1: _replace_size(s, old, new, count if _whole(count) >= 0 else None),
    "join": lambda s, iterable: _join_size(iterable, s),
    "translate": lambda s, table: len(s) * max([1, *(_text_len(v) for v in table.values() if isinstance(v, str))])
    if isinstance(table, dict) else len(s),
}


def _estimate(sizes: dict[str, Callable[..., int]], name: str, what: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuse (``TemplateLimitError``) a call of ``name`` that would make a value over
    ``MAX_VALUE``; arguments it does not take are left for the call itself to refuse."""
    estimate = sizes.get(name)
    if estimate is None:
        return
    try:
        size = estimate(*args, **kwargs)
    except (TypeError, ValueError, AttributeError):
        return
    _cap(size, what)


# numbers that make a filter work for ever or write gigabytes however small its input:
# (filter, position after the value, keyword, most)
_ARGUMENT_LIMITS = (("round", 1, "precision", 1_000), ("tojson", 1, "indent", 100))


def _argument(given: tuple[Any, ...], kwargs: dict[str, Any], position: int, keyword: str, default: Any) -> Any:
    """The argument at ``position`` of ``given`` (the value first), else ``keyword``, else ``default``."""
    return given[position] if len(given) > position else kwargs.get(keyword, default)


def _metered_filter(name: str, func: Callable[..., Any], kind: str = "filter") -> Callable[..., Any]:
    """Filter (or test) ``func`` counted against the render's budget: what it is given and what
    it returns, refused beforehand when it would make a value over ``MAX_VALUE``."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0  # the context, eval context or environment

    @wraps(func)
    def metered(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        if name == "sum" and not isinstance(_argument(args[skip:], kwargs, 2, "start", 0), (int, float)):
            raise TemplateLimitError("sum() adds numbers only")
        for limited, position, keyword, most in _ARGUMENT_LIMITS:
            if name == limited and abs(_whole(_argument(args[skip:], kwargs, position, keyword, 0))) > most:
                raise TemplateLimitError(f"{name}(): {keyword} must be at most {most:,} (either sign)")
        if name == "join" and len(args) > skip and not isinstance(args[skip], (str, list, tuple, dict)):
            args = (*args[:skip], list(args[skip]), *args[skip + 1:])  # a generator, read once: made a list to measure
        budget.spend((sum(_weight(a) for a in args[skip:]) + sum(_weight(v) for v in kwargs.values())) * _SLOW.get(name, 1))
        if kind == "filter":
            _estimate(_FILTER_SIZES, name, f"the filter {name}", args[skip:], kwargs)
        result = _as_text(func(*args, **kwargs))
        size = _weight(result)
        _cap(size, f"the {kind} {name}")
        budget.spend(size)
        return _counted(result) if isinstance(result, Iterator) else result

    return metered


def _as_text(value: Any) -> Any:
    """A ``str`` made by the template (``response.lower()``, a slice, a filter) as ``Text``, so
    that it cannot be looped over character by character either."""
    return Text(value) if type(value) is str else value


def _counted(items: Iterator[Any]) -> Iterator[Any]:
    """The items of a lazy result (``map``, ``select``, ...), each counted as a step."""
    budget = _budget()
    for item in items:
        budget.step()
        yield item


def _range(*args: Any) -> range:
    """``range`` for templates. Raises ``TemplateLimitError`` past ``MAX_RANGE`` numbers."""
    numbers = range(*args)
    if len(numbers) > MAX_RANGE:
        raise TemplateLimitError(f"range() of {len(numbers):,} numbers is over the limit of {MAX_RANGE:,}")
    return numbers


def _finalize(value: Any) -> Any:
    """Every ``{{ ... }}`` printed: counted, and refused over ``MAX_VALUE`` before it is written
    (a list or dict is written by repr, up to ``PRINTED`` characters for one)."""
    if isinstance(value, str):
        size = len(value)
        _cap(size, "printing a value")
    else:
        _cap(_weight(value) * PRINTED, "printing a value")
        value = str(value)
        size = len(value)
    _budget().spend(size)
    return value


@pass_context
def _loop_items(context: Any, iterable: Any, text: int) -> Any:
    """A for-loop's items, each counted as a step with the loop body's own text ``text``."""
    budget = _budget()
    for item in iterable:
        budget.step()
        budget.spend(text)
        yield item


@pass_context
def _joined(context: Any, parts: list[Any]) -> str:
    """``a ~ b``, refused over ``MAX_VALUE`` before it is made."""
    _cap(sum(_weight(part) * (1 if isinstance(part, str) else PRINTED) for part in parts), "'~'")
    text = "".join(str(part) for part in parts)
    _budget().spend(len(text))
    return text


@pass_context
def _made(context: Any, value: Any) -> Any:
    """A list, tuple or dict written in the template, or a slice: counted, refused over ``MAX_VALUE``."""
    size = _weight(value)
    _cap(size, "a list or slice")
    _budget().spend(size)
    return _as_text(value)


@pass_context
def _used(context: Any, value: Any) -> Any:
    """An operand of a comparison: counted (comparing large values takes time)."""
    _budget().spend(_weight(value))
    return value


class _Meter(NodeTransformer):
    """Rewrites a parsed template so that its loops, ``~``, literals, slices and comparisons
    go through the budget's counters above."""

    @staticmethod
    def _wrap(node: Any, name: str, *args: Any) -> Any:
        return nodes.Filter(node, name, [nodes.Const(a, lineno=node.lineno) for a in args], [], None, None, lineno=node.lineno)

    def visit_For(self, node: Any) -> Any:
        node = self.generic_visit(node)
        text = sum(len(n.data if isinstance(n, nodes.TemplateData) else n.value) for stmt in node.body
                   for n in stmt.find_all((nodes.TemplateData, nodes.Const))
                   if isinstance(n.data if isinstance(n, nodes.TemplateData) else n.value, str))
        node.iter = self._wrap(node.iter, "ragjudge_loop_items", text)
        return node

    def visit_Concat(self, node: Any) -> Any:
        node = self.generic_visit(node)
        return self._wrap(nodes.List(node.nodes, lineno=node.lineno), "ragjudge_joined")

    def _literal(self, node: Any) -> Any:
        node = self.generic_visit(node)
        return self._wrap(node, "ragjudge_made") if getattr(node, "ctx", "load") == "load" else node

    visit_List = visit_Tuple = visit_Dict = _literal

    def visit_Getitem(self, node: Any) -> Any:
        node = self.generic_visit(node)
        return self._wrap(node, "ragjudge_made") if isinstance(node.arg, nodes.Slice) else node

    def visit_Compare(self, node: Any) -> Any:
        node = self.generic_visit(node)
        node.expr = self._wrap(node.expr, "ragjudge_used")
        for operand in node.ops:
            operand.expr = self._wrap(operand.expr, "ragjudge_used")
        return node


class _Sandbox(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox with limits: every operator, call, filter and test counted
    against the render's budget and refused beforehand when it would make a value over
    ``MAX_VALUE`` (``'x' * 10**9``), a number over ``MAX_INT_BITS`` (``10**10**10``) or a
    range over ``MAX_RANGE``."""

    intercepted_binops = frozenset(["+", "-", "*", "/", "//", "%", "**"])

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False, finalize=_finalize)
        self.globals["range"] = _range
        self.globals.pop("lipsum", None)  # paragraphs of filler: no use in a judge's prompt
        self.filters = {name: _metered_filter(name, func) for name, func in self.filters.items()}
        self.tests = {name: _metered_filter(name, func, "test") for name, func in self.tests.items()}
        self.filters.update(ragjudge_loop_items=_loop_items, ragjudge_joined=_joined, ragjudge_made=_made, ragjudge_used=_used)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        budget = _budget()
        budget.spend(_weight(left) + _weight(right))
        sized = (str, list, tuple)
        if operator == "*":
            for items, times in ((left, right), (right, left)):
                if isinstance(items, sized) and _whole(times) > 0:
                    _cap(_weight(items) * times, "'*'")
            if _whole(left) and _whole(right) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise TemplateLimitError(f"'*' would make a number over {MAX_INT_BITS:,} bits")
        elif operator == "**" and _whole(left) and _whole(right) > 0 and abs(left) > 1:
            if (abs(left).bit_length() - 1) * right > MAX_INT_BITS:
                raise TemplateLimitError(f"'**' would make a number over {MAX_INT_BITS:,} bits")
        elif operator == "+" and isinstance(left, sized) and isinstance(right, sized):
            _cap(_weight(left) + _weight(right), "'+'")
        elif operator == "%" and isinstance(left, str):
            _cap(_printf_size(left, right), "'%'")
        result = super().call_binop(context, operator, left, right)
        size = _weight(result)
        _cap(size, f"'{operator}'")
        budget.spend(size)
        return result

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        # no bytes: their methods (ljust, replace, ...) would escape the estimates made for text
        if attr in ("encode", "to_bytes"):
            return False
        return super().is_safe_attribute(obj, attr, value)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _budget().spend(_weight(argument))
        return _as_text(super().getitem(obj, argument))

    def wrap_str_format(self, value: Any) -> Any:
        wrapper = super().wrap_str_format(value)
        if wrapper is None:
            return None
        fmt = value.__self__
        mapping = value.__name__ == "format_map"

        def checked(*args: Any, **kwargs: Any) -> Any:
            given = (args[0] if args and isinstance(args[0], dict) else {}) if mapping else kwargs
            _cap(_format_size(fmt, () if mapping else args, given), f"str.{value.__name__}")
            return wrapper(*args, **kwargs)

        return checked

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # Jinja2's own signature
        budget = _budget()
        budget.step()
        owner = getattr(__obj, "__self__", None)
        budget.spend((_weight(owner) if isinstance(owner, (str, list, tuple, dict)) else 0)
                     + sum(_weight(a) for a in args) + sum(_weight(v) for v in kwargs.values()))
        name = getattr(__obj, "__name__", "")
        if isinstance(owner, (str, int, float, list, tuple, dict, type)):
            for number in (*args, *kwargs.values()):
                if abs(_whole(number)) > MAX_VALUE:
                    raise TemplateLimitError(f"{name}() is given {number:,}, over the limit of {MAX_VALUE:,}")
        if isinstance(owner, str):
            if name == "join" and args and not isinstance(args[0], (str, list, tuple, dict)):
                args = (list(args[0]), *args[1:])  # a generator, read once: made a list to measure
            _estimate(_METHOD_SIZES, name, f"str.{name}", (owner, *args), kwargs)
        result = _as_text(super().call(__context, __obj, *args, **kwargs))
        size = _weight(result)
        _cap(size, "a call")
        budget.spend(size)
        return _counted(result) if isinstance(result, Iterator) else result


def _environment() -> Any:
    return _Sandbox()


def _loop_depth(node: Any, depth: int = 0) -> int:
    deepest = depth
    for child in node.iter_child_nodes():
        deepest = max(deepest, _loop_depth(child, depth + 1 if isinstance(child, nodes.For) else depth))
    return deepest


def oneline(exc: BaseException) -> str:
    """The message of ``exc`` on one line, shortened to 300 characters."""
    message = " ".join(str(getattr(exc, "message", None) or exc).split())
    return message if len(message) <= 300 else message[:297] + "..."


def problem(exc: BaseException) -> str:
    """``exc`` on one line: its type and its message."""
    message = oneline(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


@lru_cache(maxsize=256)
def compile_template(name: str, source: str, what: str = "prompt") -> Any:
    """The compiled template ``source`` (the ``what`` of judge ``name``), its loops, operators
    and calls metered (see ``MAX_*``). Raises ``ValueError`` naming the line of a syntax error,
    for for-loops nested deeper than ``MAX_LOOP_DEPTH`` or made recursive, and for a template
    that cannot be compiled at all (nested too deeply)."""
    env = _environment()
    try:
        tree = env.parse(source)
        depth = _loop_depth(tree)
        recursive = any(loop.recursive for loop in tree.find_all(nodes.For))
    except TemplateSyntaxError as exc:
        raise ValueError(f"judge '{name}': {what} line {exc.lineno}: {exc.message}") from None
    except Exception as exc:  # RecursionError, MemoryError: a template nested beyond what can be parsed
        raise ValueError(f"judge '{name}': the {what} cannot be parsed ({problem(exc)}); simplify it") from None
    if depth > MAX_LOOP_DEPTH:
        raise ValueError(f"judge '{name}': the {what} nests for-loops {depth} deep; at most {MAX_LOOP_DEPTH} may be nested "
                         "(a loop inside a loop)")
    if recursive:
        raise ValueError(f"judge '{name}': the {what} has a recursive for-loop; a judge's template may not use them")
    try:
        tree = _Meter().visit(tree)
        tree.set_environment(env)
        return env.from_string(tree)
    except TemplateSyntaxError as exc:
        raise ValueError(f"judge '{name}': {what} line {exc.lineno}: {exc.message}") from None
    except Exception as exc:
        raise ValueError(f"judge '{name}': the {what} cannot be compiled ({problem(exc)}); simplify it") from None


def render(template: Any, values: dict[str, Any]) -> str:
    """``template`` rendered with ``values`` under a fresh budget (see ``MAX_*``). Raises what
    the template raises: ``TemplateLimitError`` past a limit, any other exception of its own."""
    token = _BUDGET.set(_Budget())
    try:
        return str(template.render(values))
    finally:
        _BUDGET.reset(token)


def variables(name: str, source: str, what: str = "prompt") -> set[str]:
    """The variables the template ``source`` (the ``what`` of judge ``name``) reads. Raises
    ``ValueError`` naming the line of a syntax error, or for a template that cannot be parsed
    at all (nested too deeply)."""
    env = _environment()
    try:
        return set(meta.find_undeclared_variables(env.parse(source)))
    except TemplateSyntaxError as exc:
        raise ValueError(f"judge '{name}': {what} line {exc.lineno}: {exc.message}") from None
    except Exception as exc:
        raise ValueError(f"judge '{name}': the {what} cannot be parsed ({problem(exc)}); simplify it") from None


__all__ = ["MAX_INT_BITS", "MAX_LOOP_DEPTH", "MAX_RANGE", "MAX_SECONDS", "MAX_STEPS", "MAX_VALUE", "MAX_WORK", "TemplateLimitError",
           "Text", "compile_template", "oneline", "problem", "render", "variables"]
