"""The building blocks of every section of a contract document: the base model (unknown
keys refused, frozen) and the constrained strings the sections share."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

Name = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")]
ItemId = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
ToolName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:/-]{1,128}$")]
Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
# Stripped: surrounding whitespace of a TOML multi-line string is layout, not meaning.
Expression = Annotated[str, StringConstraints(strip_whitespace=True), Field(min_length=1)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
