"""What every topic's schemas share: integer bounds of the database, time and id strings,
the one error body, and the base of response models."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from kernel.clock import utc

# PostgreSQL's column ranges: a larger number can only be a client error, never a lookup.
INT64_MAX = 2**63 - 1  # BIGINT: log, reward and dataset positions, sequence numbers
INT32_MAX = 2**31 - 1  # INTEGER: contract and adapter version numbers

Position = Annotated[int, Field(ge=0, le=INT64_MAX)]
Version = Annotated[int, Field(ge=1, le=INT32_MAX)]


def _rfc3339(text: str) -> str:
    """A time the domain wrote, with its offset: RFC 3339 (``date-time``) has no naive form,
    and SQLite hands back times without one (UTC, by the stores' rule)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text  # not a time at all: the schema check names it
    return text if moment.tzinfo is not None else moment.replace(tzinfo=UTC).isoformat()


# Times and ids travel as strings as the domain writes them (ISO 8601 with its offset, UUID text).
Timestamp = Annotated[str, AfterValidator(_rfc3339), Field(json_schema_extra={"format": "date-time"})]
UuidText = Annotated[str, Field(json_schema_extra={"format": "uuid"})]
JsonObject = dict[str, Any]
# A JSON number as stored: an int stays an int (a float type would serve 1 as 1.0).
Number = Annotated[int | float, WithJsonSchema({"type": "number"})]


def _representable_in_utc(moment: datetime) -> datetime:
    try:
        utc(moment)
    except OverflowError:
        raise ValueError("is out of range once converted to UTC (year 1 to 9999)") from None
    return moment


# A client-given time the stores can keep: 9999-12-31T23:59:59-23:59 parses but has no UTC form.
UtcDatetime = Annotated[datetime, AfterValidator(_representable_in_utc)]


class Out(BaseModel):
    """Base of response models: fields the domain adds later pass through, not dropped."""

    model_config = ConfigDict(extra="allow")

    @field_validator("*", mode="after")
    @classmethod
    def _with_offset(cls, value: Any) -> Any:
        # Every ``date-time`` answered is RFC 3339, with an offset (SQLite's times have none).
        if isinstance(value, datetime) and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class ErrorDetail(Out):
    code: str = Field(description="Machine-readable kind, e.g. not_found, invalid_request")
    message: str
    field: str | None = Field(None, description="The offending field, e.g. events[1].payload.text")


class ErrorOut(BaseModel):
    """The one error body of every 4xx and 5xx (api/errors.py)."""

    error: ErrorDetail
