"""A lexical pass over a CEL expression, before the real compiler sees it.

The `cel` package evaluates in Rust while holding the GIL, so nothing in Python can
interrupt a running evaluation from the outside (no thread timeout, no signal). What it
does call back into Python is functions. This pass therefore:

- refuses what is too big or too deep before the compiler spends effort on it;
- finds every comprehension macro (`all`, `exists`, `exists_one`, `map`, `filter`) and
  rewrites it so that each iteration calls a metering function, which is where the
  evaluator charges fuel and checks its deadline (see `rubric.py`);
- records call sites and identifiers with positions, so unknown names are reported at
  validation time with a line and column rather than failing on every subject later.

It is a tokenizer with bracket matching, not a parser: the real grammar check stays with
`cel.compile`, which runs on the original text first so its positions are the author's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
QUADRATIC_MACROS = frozenset({"map", "filter"})
TICK_FUNCTION = "__hcp_tick"
RESERVED_PREFIX = "__"

# Strings must end exactly where CEL's lexer ends them: code this pass took for string
# content would escape the metering rewrite. Raw strings (`r'...'`) have no escapes, so
# `r'\'` is complete; ordinary strings do, so `'\''` is one quote.
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*)
  | (?P<raw>[bB]?[rR](?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"[^"\n]*"|'[^'\n]*'))
  | (?P<string>[bB]?(?:\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\"|'''(?:\\[\s\S]|[^\\])*?'''
        |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|\d*\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>\S)
    """,
    re.VERBOSE,
)


class ScanError(Exception):
    """A limit or lexical rule broken; `offset` points into the original expression."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    offset: int


@dataclass(frozen=True)
class CallSite:
    name: str  # dotted for namespaced calls, e.g. "math.greatest"
    method: bool  # called as `receiver.name(...)`
    offset: int


@dataclass
class Scan:
    """What the lexical pass learnt about an expression."""

    tokens: list[Token]
    calls: list[CallSite] = field(default_factory=list)
    bound_names: set[str] = field(default_factory=set)  # comprehension variables
    identifiers: dict[str, int] = field(default_factory=dict)  # free name -> first offset
    max_depth: int = 0
    max_macro_depth: int = 0
    loops: int = 0  # comprehension sites, each calling the meter once per iteration
    rewritten: str = ""


def tokenize(source: str) -> list[Token]:
    tokens: list[Token] = []
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup or "punct"
        if kind in ("ws", "comment"):
            continue
        kind = "string" if kind == "raw" else kind
        if kind == "punct" and match.group() in "'\"":
            raise ScanError("unterminated string literal", match.start())
        tokens.append(Token(kind, match.group(), match.start()))
    return tokens


def scan(source: str, *, max_depth: int, max_macro_depth: int, namespaces: frozenset[str]) -> Scan:
    """Tokenize, enforce the nesting limits and produce the metered rewrite."""
    result = Scan(tokens=tokenize(source))
    toks = result.tokens
    stack: list[bool] = []  # one entry per open bracket: True when it opens a macro call
    depth = _Depth(max_depth)
    insertions: list[tuple[int, str]] = []
    sites = 0
    for i, tok in enumerate(toks):
        result.max_depth = max(result.max_depth, depth.token(tok))
        if tok.kind == "ident":
            _note_identifier(result, toks, i, namespaces)
        if tok.kind != "punct":
            continue
        if tok.text in "([{":
            is_macro = _is_macro_call(toks, i)
            stack.append(is_macro)
            if is_macro:
                _enter_macro(result, toks, i, sum(stack), max_macro_depth)
                insertions.extend(_metering_insertions(source, toks, i, sites))
                sites += 1
        elif tok.text in ")]}" and stack:
            stack.pop()
    result.rewritten = _apply(source, insertions)
    result.loops = sites
    return result


class _Depth:
    """How deep the parser must go: each open bracket is a level, and so is each unary
    ``-`` or ``!``, whose operand (with its member chain: ``-x[0].y``) is parsed one
    level down. Thousands of ``-`` in a row fit in the length limit and overflowed the
    type pass's recursion (cel_types), so both count towards the one limit. A unary
    run ends at the next binary operator, ``?``, ``:`` or ``,`` of its bracket."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.outer: list[int] = []  # per open bracket, the levels outside it
        self.level = 0  # the brackets' levels, and the unary operators still open
        self.after_operand = False  # a '-' here is binary

    def token(self, tok: Token) -> int:
        """Account for ``tok``; the level it leaves open."""
        text = tok.text
        if tok.kind != "punct" or text == ".":
            self.after_operand = tok.kind != "punct"
        elif text in "-!" and not self.after_operand:
            self.level += 1
            self._check(tok.offset)
        elif text in "([{":
            self.outer.append(self.level)
            self.level += 1
            self.after_operand = False
            self._check(tok.offset)
        elif text in ")]}":
            # What was open before the bracket stays open: a member chain may go on.
            self.level = self.outer.pop() if self.outer else 0
            self.after_operand = True
        else:  # a binary operator or a separator ends the unary operators before it
            self.level = self.outer[-1] + 1 if self.outer else 0
            self.after_operand = False
        return self.level

    def _check(self, offset: int) -> None:
        if self.level > self.limit:
            raise ScanError(f"nesting deeper than {self.limit} levels (each bracket and each "
                            "unary '-' or '!' is one)", offset)


def _note_identifier(result: Scan, toks: list[Token], i: int, namespaces: frozenset[str]) -> None:
    tok = toks[i]
    if tok.text.startswith(RESERVED_PREFIX):
        raise ScanError(f"identifiers starting with {RESERVED_PREFIX!r} are reserved", tok.offset)
    after_dot = i > 0 and toks[i - 1].text == "."
    calls = i + 1 < len(toks) and toks[i + 1].text == "("
    if calls and tok.text in MACROS and after_dot:
        return
    if calls:
        namespaced = after_dot and i > 1 and toks[i - 2].text in namespaces
        name = f"{toks[i - 2].text}.{tok.text}" if namespaced else tok.text
        method = after_dot and not namespaced
        result.calls.append(CallSite(name, method, tok.offset))
        return
    namespace_root = i + 1 < len(toks) and toks[i + 1].text == "." and tok.text in namespaces
    if not after_dot and not namespace_root:
        result.identifiers.setdefault(tok.text, tok.offset)


def _is_macro_call(toks: list[Token], i: int) -> bool:
    return (
        toks[i].text == "("
        and i >= 2
        and toks[i - 1].kind == "ident"
        and toks[i - 1].text in MACROS
        and toks[i - 2].text == "."
    )


def _enter_macro(result: Scan, toks: list[Token], i: int, depth: int, limit: int) -> None:
    result.max_macro_depth = max(result.max_macro_depth, depth)
    if depth > limit:
        raise ScanError(
            f"comprehensions nested deeper than {limit} ({toks[i - 1].text} inside another)",
            toks[i - 1].offset,
        )
    if i + 2 < len(toks) and toks[i + 1].kind == "ident" and toks[i + 2].text == ",":
        result.bound_names.add(toks[i + 1].text)


def _metering_insertions(source: str, toks: list[Token], open_index: int, site: int) -> list[tuple[int, str]]:
    """Make argument 1 of the macro (evaluated once per element) call the meter first.

    `map(x, body)` gains a filter that is always true: `map(x, tick(site), body)`.
    Predicates become `(tick(site) ? (p) : false)`: a ternary rather than `&&`, because
    CEL's `&&` absorbs an error when the other side is false, which would swallow the
    meter's stop. `map` and `filter` pass their site number because cel-rust rebuilds
    their accumulator on every step (quadratic), so the meter charges them progressively.
    """
    args = _argument_spans(source, toks, open_index)
    if len(args) < 2:
        return []  # malformed; cel.compile reports it on the original text
    start, end = args[1]
    macro = toks[open_index - 1].text
    tick = f"{TICK_FUNCTION}({site})" if macro in QUADRATIC_MACROS else f"{TICK_FUNCTION}()"
    if macro == "map" and len(args) == 2:
        return [(start, f"{tick}, ")]
    return [(start, f"({tick} ? ("), (end, ") : false)")]


def _argument_spans(source: str, toks: list[Token], open_index: int) -> list[tuple[int, int]]:
    """Character spans of the top-level arguments of the call opened at `open_index`."""
    spans: list[tuple[int, int]] = []
    depth = 0
    start = toks[open_index].offset + 1
    for tok in toks[open_index + 1 :]:
        if tok.kind == "punct" and tok.text in "([{":
            depth += 1
        elif tok.kind == "punct" and tok.text in ")]}":
            if depth == 0:
                spans.append((start, tok.offset))
                return spans
            depth -= 1
        elif tok.text == "," and depth == 0:
            spans.append((start, tok.offset))
            start = tok.offset + 1
    return spans


def _apply(source: str, insertions: list[tuple[int, str]]) -> str:
    # Insert from the end so earlier offsets stay valid; each insertion is a pure insert.
    text = source
    for offset, snippet in sorted(insertions, key=lambda item: item[0], reverse=True):
        text = text[:offset] + snippet + text[offset:]
    return text


def field_reads(scanned: Scan, names: Iterable[str]) -> dict[str, frozenset[str] | None]:
    """For each of ``names``: the fields the expression reads it through, when every read
    is a plain field selection (`counts.tool_calls`, `has(counts.x)`); None when some
    read takes the value itself (`size(counts)`, `counts.all(...)`, `'x' in counts`,
    `counts.?x`) or the name is also a comprehension variable."""
    found: dict[str, set[str] | None] = {}
    toks = scanned.tokens
    for i in _variable_reads(scanned, frozenset(names)):
        tok = toks[i]
        selected = (i + 2 < len(toks) and toks[i + 1].text == "." and toks[i + 2].kind == "ident"
                    and not (i + 3 < len(toks) and toks[i + 3].text == "("))
        fields = found.setdefault(tok.text, set())
        if not selected or tok.text in scanned.bound_names:
            found[tok.text] = None
        elif fields is not None:
            fields.add(toks[i + 2].text)
    return {name: None if fields is None else frozenset(fields) for name, fields in found.items()}


def read_sites(scanned: Scan, names: Iterable[str]) -> dict[str, int]:
    """For each of ``names`` the expression reads: how many places read it (a name not
    after a dot and not called), each evaluated at most once when there are no loops."""
    counts: dict[str, int] = {}
    for i in _variable_reads(scanned, frozenset(names)):
        name = scanned.tokens[i].text
        counts[name] = counts.get(name, 0) + 1
    return counts


def _variable_reads(scanned: Scan, names: frozenset[str]) -> Iterator[int]:
    """The token indexes where one of ``names`` is read as a variable: not after a dot
    (a field of that name) and not called (a function of that name)."""
    toks = scanned.tokens
    for i, tok in enumerate(toks):
        if tok.kind != "ident" or tok.text not in names or (i > 0 and toks[i - 1].text == "."):
            continue
        if i + 1 < len(toks) and toks[i + 1].text == "(":
            continue
        yield i


def line_column(source: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, column
