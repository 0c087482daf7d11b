"""A static type pass over a CEL expression: the mistakes visible before it runs.

CEL never converts between ``int``, ``uint`` and ``double``, so
``1.0 - counts.tool_errors / counts.tool_calls`` compiles and then fails on every
subject it judges: each becomes a recorded error and no reward. This pass infers the
type of a sub-expression where it is certain (literals, the documented input variables,
conversions, ``size``) and reports arithmetic whose operand types can never match, a
field that a documented map does not have, and a criterion or gate that can only yield
the wrong type. Whatever it cannot know is ``dyn`` and passes: it reports only what
would fail on every subject. The syntax itself is checked by ``cel.compile`` first, so
anything this small parser does not follow is given up on silently.
"""

from __future__ import annotations

from contract.cel_scan import MACROS, Token, tokenize
from contract.cel_schema import (
    BOOL,
    BYTES,
    CONCRETE,
    DOUBLE,
    DYN,
    INT,
    NULL,
    NUMERIC,
    RETURNS,
    SAME_AS_ARGUMENT,
    STRING,
    UINT,
    T,
    list_of,
    map_of,
)


class TypeMistake(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message, self.offset = message, offset


class _GiveUp(Exception):
    """A construct this parser does not follow: no verdict rather than a wrong one."""


_PAIRS = frozenset({"&&", "||", "==", "!=", "<=", ">="})
_RELATIONS = frozenset({"<", "<=", ">", ">=", "==", "!=", "in"})
def infer(source: str, variables: dict[str, T]) -> T:
    """The type of ``source``; raises ``TypeMistake`` for a mistake it can prove."""
    try:
        parser = _Parser(_merged(tokenize(source)), variables)
        result = parser.expression()
        if parser.peek() is not None:
            raise _GiveUp()
        return result
    except (_GiveUp, IndexError):
        return DYN


def _merged(tokens: list[Token]) -> list[Token]:
    # The scanner yields one character per punctuation token; join the two-character ones.
    out: list[Token] = []
    for tok in tokens:
        last = out[-1] if out else None
        pair = (last.text + tok.text) if last is not None else ""
        if (last is not None and last.kind == tok.kind == "punct" and pair in _PAIRS
                and last.offset + 1 == tok.offset):
            out[-1] = Token("punct", pair, last.offset)
        else:
            out.append(tok)
    return out


class _Parser:
    """Precedence climbing over the tokens, returning types instead of a tree."""

    def __init__(self, tokens: list[Token], variables: dict[str, T]) -> None:
        self.tokens, self.i = tokens, 0
        self.scopes: list[dict[str, T]] = [variables]

    def peek(self, ahead: int = 0) -> Token | None:
        index = self.i + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    def at(self, *texts: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.text in texts and tok.kind in ("punct", "ident")

    def take(self, text: str | None = None) -> Token:
        tok = self.peek()
        if tok is None or (text is not None and tok.text != text):
            raise _GiveUp()
        self.i += 1
        return tok

    def expression(self) -> T:
        condition = self.binary(0)
        if not self.at("?"):
            return condition
        self.take("?")
        yes = self.binary(0)
        self.take(":")
        no = self.expression()
        return yes if yes.kind == no.kind else DYN

    _LEVELS = (("||",), ("&&",), tuple(_RELATIONS), ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int) -> T:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.at(*self._LEVELS[level]):
            op = self.take()
            right = self.binary(level + 1)
            left = _combine(op, left, right)
        return left

    def unary(self) -> T:
        if self.at("!"):
            self.take()
            self.unary()
            return BOOL
        if self.at("-"):
            op = self.take()
            operand = self.unary()
            if operand.kind in ("string", "bool", "list", "map"):
                raise TypeMistake(f"'-' cannot negate a {operand.kind}", op.offset)
            return operand
        return self.member(self.primary())

    def member(self, value: T) -> T:
        while self.at(".", "["):
            if self.take().text == "[":
                self.expression()
                self.take("]")
                value = value.elem or DYN if value.kind in ("list", "map") else DYN
                continue
            name = self.take()
            value = self.method(value, name) if self.at("(") else self.select(value, name)
        return value

    def select(self, value: T, name: Token) -> T:
        if value.fields is None:
            return value.elem or DYN if value.kind == "map" else DYN
        found = value.field(name.text)
        if found is None:
            known = ", ".join(key for key, _ in value.fields)
            raise TypeMistake(f"no field {name.text!r} here (fields: {known})", name.offset)
        return found

    def method(self, receiver: T, name: Token) -> T:
        if name.text in MACROS:
            return self.macro(receiver, name.text)
        arguments = self.arguments()
        if name.text in ("min", "max", "sum") and not arguments:
            return receiver.elem or DYN
        return _call(name.text, [receiver, *arguments])

    def macro(self, receiver: T, name: str) -> T:
        self.take("(")
        variable = self.take().text
        element = receiver.elem or DYN if receiver.kind == "list" else (
            STRING if receiver.kind == "map" else DYN)
        self.scopes.append({variable: element})
        try:
            parts = []
            while self.at(","):
                self.take(",")
                parts.append(self.expression())
            self.take(")")
        finally:
            self.scopes.pop()
        if name == "map":
            return list_of(parts[-1] if parts else DYN)
        if name == "filter":
            return list_of(element)
        return BOOL

    def arguments(self) -> list[T]:
        self.take("(")
        found: list[T] = []
        while not self.at(")"):
            found.append(self.expression())
            if not self.at(")"):
                self.take(",")
        self.take(")")
        return found

    def primary(self) -> T:
        tok = self.take()
        if tok.kind == "number":
            return _number(tok.text)
        if tok.kind == "string":
            return BYTES if tok.text[:1] in "bB" else STRING
        if tok.text == "(":
            inner = self.expression()
            self.take(")")
            return inner
        if tok.text in ("[", "{"):
            return self.literal(tok.text)
        if tok.kind != "ident":
            raise _GiveUp()
        return self.identifier(tok)

    def identifier(self, tok: Token) -> T:
        if tok.text in ("true", "false"):
            return BOOL
        if tok.text == "null":
            return NULL
        if tok.text == "has":
            self.arguments_unchecked()
            return BOOL
        call = self.peek(2)
        if tok.text in ("math", "sets") and self.at(".") and call is not None and call.text == "(":
            self.take(".")
            name = f"{tok.text}.{self.take().text}"
            return _call(name, self.arguments())
        if self.at("("):
            return _call(tok.text, self.arguments())
        for scope in reversed(self.scopes):
            if tok.text in scope:
                return scope[tok.text]
        return DYN

    def arguments_unchecked(self) -> None:
        # has(m.f) tests for a field; reading it here would report the very absence it tests.
        depth = 0
        while True:
            text = self.take().text
            depth += text in "([{"
            depth -= text in ")]}"
            if depth == 0:
                return

    def literal(self, opened: str) -> T:
        closing = "]" if opened == "[" else "}"
        values: list[T] = []
        while not self.at(closing):
            values.append(self.expression())
            if opened == "{":
                self.take(":")
                values[-1] = self.expression()
            if not self.at(closing):
                self.take(",")
        self.take(closing)
        same = values[0] if values and all(v == values[0] for v in values) else DYN
        return list_of(same) if opened == "[" else map_of(same)


def _number(text: str) -> T:
    lowered = text.lower()
    if lowered.endswith("u"):
        return UINT
    if lowered.startswith("0x"):
        return INT
    return DOUBLE if "." in lowered or "e" in lowered else INT


def _combine(op: Token, left: T, right: T) -> T:
    if op.text in _RELATIONS or op.text in ("&&", "||"):
        return BOOL
    a, b = left.kind, right.kind
    if a not in CONCRETE or b not in CONCRETE:
        return DYN
    if a in NUMERIC and b in NUMERIC:
        if a != b:
            raise TypeMistake(f"'{op.text}' mixes {a} and {b}: CEL does not convert between "
                              f"them; convert one side, e.g. double(...)", op.offset)
        return left
    if op.text == "+" and a == b and a in ("string", "bytes", "list"):
        return left
    raise TypeMistake(f"'{op.text}' is not defined for {a} and {b}", op.offset)


def _call(name: str, arguments: list[T]) -> T:
    if name in RETURNS:
        return RETURNS[name]
    if name in SAME_AS_ARGUMENT and arguments:
        first = arguments[0]
        if len(arguments) == 1 and first.kind == "list" and name not in ("math.abs", "math.sign"):
            return first.elem or DYN
        return first if all(a == first for a in arguments) else DYN
    if name in ("reverse", "distinct", "flatten", "slice", "sort") and arguments:
        return arguments[0] if arguments[0].kind in ("list", "string") else DYN
    return DYN
