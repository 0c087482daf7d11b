"""Field reads of map variables turned into variables of their own, for unmetered runs.

Converting a map into CEL costs a few microseconds for the map and about one per entry,
a plain number a fraction of one. A loop-free expression that reads a map variable only
as `counts.tool_calls` can therefore run, unchanged in meaning, as a program that reads a
variable holding `counts["tool_calls"]` instead: the same value, converted the same way,
without building the map. Used only where contract/cel_unmetered.py runs an expression
without the meter, and only when every field it reads is in the subject's map; otherwise
(a missing field, a null, not a map) the expression runs as written, so every error is
the one it always gave.

A variable is flattened only when every read of it is a plain field selection that is
not the argument of `has()` (a macro that needs the selection itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cel

from contract import cel_scan

PREFIX = "__f"  # reserved: authors cannot name an identifier "__..." (cel_scan)


@dataclass(frozen=True, eq=False)
class Flat:
    """An expression with its field reads of some map variables as variables of their own."""

    program: cel.Program
    fields: Mapping[str, tuple[str, str]]  # its variable -> (map variable, field)
    whole: frozenset[str]  # the variables it still reads as themselves

    def values(self, variables: Mapping[str, Any]) -> dict[str, Any] | None:
        """The flattened fields of ``variables``; None when one is not there to read."""
        found: dict[str, Any] = {}
        for name, (variable, field) in self.fields.items():
            value = variables.get(variable)
            if type(value) is not dict or field not in value:
                return None
            found[name] = value[field]
        return found


def flatten(text: str, variables: frozenset[str]) -> Flat | None:
    """``text`` (loop-free CEL) with each field read of the map variables read only by
    field replaced by a variable; None when there is none or the result does not compile."""
    toks = cel_scan.tokenize(text)
    reads: dict[str, list[tuple[int, int, str]]] = {}
    whole: set[str] = set()
    for i, tok in enumerate(toks):
        if tok.kind != "ident" or tok.text not in variables or (i > 0 and toks[i - 1].text == "."):
            continue
        if i + 1 < len(toks) and toks[i + 1].text == "(":
            continue  # a function of that name, not the variable
        if _plain_field_read(toks, i):
            selected = toks[i + 2]
            reads.setdefault(tok.text, []).append(
                (tok.offset, selected.offset + len(selected.text), selected.text))
        else:
            whole.add(tok.text)
    spans = sorted((span, name) for name, found in reads.items() if name not in whole for span in found)
    if not spans:
        return None
    names: dict[tuple[str, str], str] = {}
    pieces, last = [], 0
    for (start, end, field), variable in spans:
        flat_name = names.setdefault((variable, field), f"{PREFIX}{len(names)}")
        pieces += [text[last:start], flat_name]
        last = end
    pieces.append(text[last:])
    try:
        program = cel.compile("".join(pieces))
    except Exception:
        return None
    fields = {flat_name: key for key, flat_name in names.items()}
    return Flat(program, fields, frozenset(variables - {v for v, _ in names}))


def _plain_field_read(toks: list[cel_scan.Token], i: int) -> bool:
    selects = (i + 2 < len(toks) and toks[i + 1].text == "." and toks[i + 2].kind == "ident"
               and not (i + 3 < len(toks) and toks[i + 3].text == "("))
    in_has = i >= 2 and toks[i - 1].text == "(" and toks[i - 2].text == "has"
    return selects and not in_has
