"""Parse, validate, normalise and hash an HCP contract document (TOML).

`parse_contract` reports every problem it can find in one go (an author fixing a draft
should not have to resubmit once per mistake): TOML syntax, schema errors with their path,
expressions that do not compile (naming the item, the expression and the position),
duplicate ids and dangling references. Only a TOML syntax error stops the checks early,
because nothing after it can be read.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

import tomli_w
from pydantic import ValidationError

from contract import checks
from contract.problems import ContractInvalid, Problem
from contract.sections import ContractDocument

__all__ = [
    "ContractDocument",
    "ContractInvalid",
    "Problem",
    "canonical_form",
    "content_hash",
    "contract_json_schema",
    "dump_toml",
    "parse_contract",
]


_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")

# The largest document accepted (UTF-8 bytes): with at most MAX_CRITERIA + MAX_GATES
# expressions of at most 4096 characters each, real contracts stay far below it, and a
# refused document costs a length check, not a parse.
MAX_DOCUMENT_BYTES = 128 * 1024


def parse_contract(toml_text: str) -> ContractDocument:
    """Parse and fully validate a contract; raises `ContractInvalid` listing every problem."""
    size = len(toml_text.encode("utf-8", "surrogatepass"))
    if size > MAX_DOCUMENT_BYTES:
        raise ContractInvalid([Problem("limit", "", f"the document is {size} bytes; "
                                                    f"the limit is {MAX_DOCUMENT_BYTES}")])
    try:
        data = tomllib.loads(toml_text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_POSITION.search(str(exc))
        line, column = (int(match[1]), int(match[2])) if match else (None, None)
        message = _TOML_POSITION.sub("", str(exc)).strip()
        raise ContractInvalid([Problem("toml", "", message, line, column)]) from None
    problems = _schema_problems(data) + checks.semantic_problems(data)
    problems = [_located(problem, toml_text) for problem in _unique(problems)]
    if problems:
        raise ContractInvalid(problems)
    return ContractDocument.model_validate(data)


def _schema_problems(data: dict[str, Any]) -> list[Problem]:
    try:
        ContractDocument.model_validate(data)
    except ValidationError as exc:
        return [
            Problem("schema", _path(error["loc"]), _schema_message(error))
            for error in exc.errors(include_url=False)
        ]
    return []


def _schema_message(error: Any) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown key (misspelt, or not part of this schema_version)"
    message = str(error["msg"])
    return message.removeprefix("Value error, ")


def _path(loc: Iterable[Any]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _unique(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[str, str]] = set()
    result = []
    for problem in problems:
        if (problem.path, problem.message) not in seen:
            seen.add((problem.path, problem.message))
            result.append(problem)
    return result


def _located(problem: Problem, toml_text: str) -> Problem:
    if problem.line is not None or not problem.path:
        return problem
    line = checks.locate(toml_text, problem.path)
    if line is None:
        return problem
    return Problem(**{**asdict(problem), "line": line})


def canonical_form(doc: ContractDocument) -> str:
    """The normalised document as canonical JSON: defaults filled, keys sorted, sets sorted.

    Whitespace, comments, key order, the order of criteria and gates, and writing a default
    explicitly all leave this text (and so the content hash) unchanged.
    """
    return json.dumps(
        doc.model_dump(mode="json"),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def content_hash(doc: ContractDocument) -> str:
    """sha256 (64 lowercase hex digits) of the canonical JSON; stored with every reward."""
    return hashlib.sha256(canonical_form(doc).encode("utf-8")).hexdigest()


def dump_toml(doc: ContractDocument) -> str:
    """The normalised document as TOML; parsing it back gives the same content hash."""
    return tomli_w.dumps(doc.model_dump(mode="json", exclude_none=True), multiline_strings=True)


def contract_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the document, for `hcp contract schema` and editors."""
    schema = ContractDocument.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "HCP contract"
    return schema
