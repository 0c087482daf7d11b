"""What a request's ``model`` names: the mixture, a specialist, an alias, a version, bytes.

Pure. ``auto`` (or nothing) lets the serving contract's router pick the specialist per
turn; ``coding`` is the alias the contract's slot serves from (``production`` unless the
slot says otherwise); ``coding@staging`` another alias; ``coding@3`` a version;
``sha256:<64 hex>`` the adapter whose artifact has that digest, whatever its name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from kernel.errors import Invalid

AUTO = "auto"
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")

Kind = Literal["auto", "slot", "alias", "version", "digest"]


class ModelInvalid(Invalid):
    field = "model"


@dataclass(frozen=True)
class ModelRef:
    kind: Kind
    specialist: str | None = None
    alias: str | None = None  # kind "alias"
    version: int | None = None  # kind "version"
    digest: str | None = None  # kind "digest": 64 hex digits, no prefix

    @property
    def text(self) -> str:
        if self.kind == "auto":
            return AUTO
        if self.kind == "digest":
            return f"sha256:{self.digest}"
        suffix = self.alias if self.kind == "alias" else self.version
        return f"{self.specialist}@{suffix}" if suffix is not None else str(self.specialist)


def parse_model(name: str | None) -> ModelRef:
    """The reference ``name`` spells; raises ModelInvalid (a 400 naming ``model``)."""
    if name is None or name == "" or name == AUTO:
        return ModelRef("auto")
    digest = _DIGEST.match(name)
    if digest:
        return ModelRef("digest", digest=digest[1])
    specialist, at, suffix = name.partition("@")
    if not _NAME.match(specialist):
        raise ModelInvalid(f"'{name}' is not a model: use auto, SPECIALIST, SPECIALIST@ALIAS, "
                           "SPECIALIST@VERSION or sha256:<64 hex digits>")
    if not at:
        return ModelRef("slot", specialist)
    if suffix.isdigit() and len(suffix) < 10:
        return ModelRef("version", specialist, version=int(suffix))
    if _NAME.match(suffix):
        return ModelRef("alias", specialist, alias=suffix)
    raise ModelInvalid(f"'{name}': after '@' comes an alias name or a version number")
