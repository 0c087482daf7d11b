"""What is wrong with a contract draft, as values an API or CLI can show."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kernel.errors import Invalid


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a draft. `line`/`column` point into the TOML text when known;
    `expression_line`/`expression_column` point into the offending expression."""

    kind: str  # toml | schema | expression | type | duplicate | reference
    path: str  # e.g. "evaluation.criteria[2].weight"
    message: str
    line: int | None = None
    column: int | None = None
    expression: str | None = None
    expression_line: int | None = None
    expression_column: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line}" if self.line else ""
        where += f", column {self.column})" if self.line and self.column else (")" if where else "")
        text = f"{self.path or 'document'}{where}: {self.message}"
        if self.expression is not None:
            at = f" at {self.expression_line}:{self.expression_column}"
            text += f"\n    in `{self.expression}`{at}"
        return text

    def to_json(self) -> dict[str, Any]:
        body = {key: value for key, value in asdict(self).items() if value is not None}
        body["field"] = self.path or "document"  # the API's error body names the field so
        return body


class ContractInvalid(Invalid):
    """A contract document that cannot be accepted; `problems` lists all that was found."""

    code = "invalid_contract"

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"contract has {len(problems)} problem(s):\n{lines}")
