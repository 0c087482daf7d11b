"""Validation of OpenLineage events against the pinned JSON Schemas, offline.

The core schema (OpenLineage 2-0-2) checks the event; each facet is checked again against
the schema its ``_schemaURL`` names, which must be one of the pinned ones (or ours): an
event naming a schema we cannot check fails, rather than passing unchecked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

import audit.exports

PINNED = Path(__file__).resolve().parents[1] / "data" / "openlineage"
OURS = Path(audit.exports.__file__).parent / "HcpRunFacet.json"


@cache
def registry() -> Registry:
    schemas = [json.loads(p.read_text()) for p in [*sorted(PINNED.glob("*.json")), OURS]]
    return Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas)


def _validator(url: str) -> Draft202012Validator:
    base = url.split("#", 1)[0]
    if base not in registry():
        raise AssertionError(f"no pinned schema for {url}")
    return Draft202012Validator({"$ref": url}, registry=registry(),
                                format_checker=Draft202012Validator.FORMAT_CHECKER)


def facets(event: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield from event["run"].get("facets", {}).items()
    yield from event["job"].get("facets", {}).items()
    for dataset in event.get("inputs", []) + event.get("outputs", []):
        for key in ("facets", "inputFacets", "outputFacets"):
            yield from dataset.get(key, {}).items()


def validate(event: dict[str, Any]) -> None:
    """Raise ``jsonschema.ValidationError`` (or AssertionError) unless ``event`` is valid."""
    _validator(event["schemaURL"]).validate(event)
    for _name, facet in facets(event):
        _validator(facet["_schemaURL"]).validate(facet)
