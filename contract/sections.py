"""The sections of an HCP contract document, as pydantic models.

Every model forbids unknown keys: a misspelt key in a contract would otherwise be silently
ignored, and the author would believe a rule is in force that is not. Cross-references
(a trigger naming an unknown specialist, ...) are checked in `document.py`, where every
problem is collected rather than the first one raised.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import (
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)

from contract.judges import Judge
from contract.policy import TriggerPolicy
from contract.sections_base import Digest, Expression, ItemId, Name, Section, ToolName, Unit

__all__ = ["Digest", "Expression", "ItemId", "Judge", "Name", "Section", "ToolName", "Unit"]


class ContractMeta(Section):
    name: Name
    description: str
    schema_version: Literal[1]


class RouterSettings(Section):
    strategy: Literal["learned", "keywords", "fixed"] = "learned"
    default_specialist: Name
    min_confidence: Unit = 0.0  # below it the router falls back to the default specialist


class Specialist(Section):
    description: str = ""
    adapter_alias: Name = "production"  # the alias the harness serves this slot from
    keywords: list[str] = []
    priority: int = 0
    tools: list[ToolName] | None = None  # narrower allowlist for this slot; None: harness-wide


class Hook(Section):
    point: Literal["session_start", "pre_turn", "post_turn", "pre_tool", "post_tool"]
    name: Name
    digest: Digest | None = None


def text_digest(text: str) -> str:
    """The content address of a prompt's or skill's text: ``sha256:`` + hex of its UTF-8."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class StoredText(Section):
    """A prompt or skill stored with the contract, addressed by the digest of its text.

    ``digest`` may be left out (it is computed) or written to pin the text: a digest that
    does not match the text is refused, so the text can be trusted to be what it names.
    """

    text: Annotated[str, Field(min_length=1)]
    digest: Digest

    @model_validator(mode="before")
    @classmethod
    def _addressed(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("text"), str):
            actual = text_digest(data["text"])
            if data.get("digest") not in (None, actual):
                raise ValueError(f"digest {data['digest']} does not match the text ({actual})")
            data = {**data, "digest": actual}
        return data


def _stored_or_digest(value: Any) -> str:
    return "text" if isinstance(value, dict | StoredText) else "digest"


# A prompt or skill: its text (stored, content-addressed) or, as before, only its digest.
TextOrDigest = Annotated[
    Annotated[StoredText, Tag("text")] | Annotated[Digest, Tag("digest")],
    Discriminator(_stored_or_digest),
]


def digest_of(value: StoredText | str) -> str:
    return value.digest if isinstance(value, StoredText) else value


class Generation(Section):
    """Limits of what a served answer may cost (``POST /v1/chat/completions``)."""

    max_tokens: Annotated[int, Field(ge=1, le=8192)] = 256  # a request may ask for fewer
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] = 0.0  # when the request names none
    max_temperature: Annotated[float, Field(ge=0.0, le=2.0)] = 2.0


_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class SessionLife(Section):
    """When a session of outside traffic (the gateway's, OTLP's) ends by itself."""

    # A session whose last event is this old ends: the server writes `session.expired`
    # once, which closes its open turn and episode (contract/subject.py).
    idle_timeout: Annotated[str, Field(pattern=r"^[1-9][0-9]{0,6}(s|m|h|d)$")] | None = None

    @property
    def idle_timeout_s(self) -> int | None:
        if self.idle_timeout is None:
            return None
        return int(self.idle_timeout[:-1]) * _SECONDS[self.idle_timeout[-1]]


class Harness(Section):
    base_model: Annotated[str, Field(min_length=1)]
    base_model_digest: Digest | None = None
    router: RouterSettings
    specialists: Annotated[dict[Name, Specialist], Field(min_length=1)]
    tool_allowlist: list[ToolName] = []
    hooks: list[Hook] = []
    prompts: dict[Name, TextOrDigest] = {}
    skills: dict[Name, TextOrDigest] = {}
    # Added later: left out of the canonical form when unset, so documents written before
    # it keep their content hash.
    generation: Generation | None = None
    sessions: SessionLife | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for later in ("generation", "sessions"):
            if data.get(later) is None:
                data.pop(later, None)
        return data

    @property
    def limits(self) -> Generation:
        return self.generation or Generation()

    @field_validator("tool_allowlist")
    @classmethod
    def _as_set(cls, tools: list[str]) -> list[str]:
        # An allowlist is a set: order and repeats carry no meaning, so neither may change
        # the content hash.
        return sorted(set(tools))

    def allows(self, tool: str, specialist: str | None) -> bool:
        """Whether `tool` was allowed to the specialist that called it."""
        slot = self.specialists.get(specialist) if specialist else None
        if slot is not None and slot.tools is not None:
            return tool in slot.tools
        return tool in self.tool_allowlist


class Criterion(Section):
    id: ItemId
    weight: Annotated[float, Field(gt=0.0, allow_inf_nan=False)]
    expression: Expression
    description: str = ""


class Gate(Section):
    id: ItemId
    expression: Expression
    description: str = ""


class AppliesTo(Section):
    specialists: list[Name] = []  # empty: every specialist
    event_types: list[str] = []  # the subject must contain one of these; empty: any
    when: Expression | None = None  # a bool expression over the subject input


class Split(Section):
    # Split rule 1, kept so that documents written under it parse and keep their content
    # hash: it no longer decides a subject's side, which is the subject's own under every
    # contract (contract/split.py, rule 2). Its values are still shown and diffed.
    held_out_fraction: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.1
    seed: Annotated[int, Field(ge=0)] = 0
    # What is hashed: the subject id, or the subject's user text, so that every answer to
    # the same prompt (a harness sampling k answers per task) lands on the same side and
    # a held-out prompt is never trained on. Added later: left out of the canonical form
    # at its default, so documents written before it keep their content hash.
    by: Literal["subject", "user_text"] = "subject"

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("by") == "subject":
            data.pop("by")
        return data

    def key(self, subject_id: str, user_text: str) -> str:
        """What the split hashes for a subject."""
        return user_text if self.by == "user_text" else subject_id


class EvaluationSection(Section):
    subject: Literal["turn", "episode"]
    applies_to: AppliesTo = AppliesTo()
    aggregation: Literal["weighted_mean", "min", "geometric_mean"] = "weighted_mean"
    criteria: Annotated[list[Criterion], Field(min_length=1)]
    gates: list[Gate] = []
    split: Split = Split()
    # Added later: left out of the canonical form when empty, so documents written before
    # judges existed keep their content hash (contract/judges.py).
    judges: list[Judge] = []

    @field_validator("criteria", "gates", "judges")
    @classmethod
    def _by_id(cls, items: list[Any]) -> list[Any]:
        # Criteria, gates and judges are sets keyed by id; reordering them must not change
        # the hash.
        return sorted(items, key=lambda item: item.id)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not data.get("judges"):
            data.pop("judges", None)
        return data

    def judge(self, judge_id: str) -> Judge | None:
        return next((j for j in self.judges if j.id == judge_id), None)


class Training(Section):
    eligible: Expression = "true"
    triggers: dict[Name, TriggerPolicy] = {}

    @field_validator("eligible")
    @classmethod
    def _strip(cls, text: str) -> str:
        return text.strip()


class ContractDocument(Section):
    """A whole HCP contract: harness configuration, rubric and training policy."""

    contract: ContractMeta
    harness: Harness
    evaluation: EvaluationSection
    training: Training = Training()

    @property
    def name(self) -> str:
        return self.contract.name

    def criterion(self, criterion_id: str) -> Criterion | None:
        return next((c for c in self.evaluation.criteria if c.id == criterion_id), None)
