"""Write clients/python/hcp_client/models.py from the API's OpenAPI document: one pydantic
model per schema of ``components.schemas``, so the client's models and the API's come from
one source. tests/unit/test_client_models.py fails when the file is not what this writes.

    .venv/bin/python scripts/generate_client_models.py
"""

from __future__ import annotations

import keyword
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "clients" / "python" / "hcp_client" / "models.py"
HEADER = '''"""Models of the HCP API's bodies, generated from its OpenAPI document by
scripts/generate_client_models.py: do not edit (tests/unit/test_client_models.py fails when
this file and the API disagree). Fields the server adds later are kept (extra="allow")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ApiModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
'''


def class_name(ref_or_name: str) -> str:
    name = ref_or_name.rsplit("/", 1)[-1]
    if "__" in name:  # api__schemas__registry__AdapterOut -> RegistryAdapterOut
        parts = name.split("__")
        name = parts[-2].title().replace("_", "") + parts[-1]
    return name


def annotation(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return class_name(schema["$ref"])
    if "anyOf" in schema or "oneOf" in schema:
        options = [annotation(s) for s in schema.get("anyOf", schema.get("oneOf", []))]
        unique = list(dict.fromkeys(options))
        return " | ".join(unique) if unique else "Any"
    kind = schema.get("type")
    if kind == "string":
        return "str"
    if kind == "integer":
        return "int"
    if kind == "number":
        return "float"
    if kind == "boolean":
        return "bool"
    if kind == "null":
        return "None"
    if kind == "array":
        return f"list[{annotation(schema.get('items', {}))}]"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict) \
            and not schema.get("properties"):
        return f"dict[str, {annotation(schema['additionalProperties'])}]"
    if kind == "object":
        return "dict[str, Any]"
    return "Any"


def python_name(name: str) -> str:
    """The attribute a field is read by: its own name where Python and pydantic allow it."""
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        return f"field_{''.join(c if c.isalnum() else '_' for c in name)}"
    from pydantic import BaseModel

    # A field named like a BaseModel attribute (``schema``) would shadow it, and pydantic
    # warns on every import of the client.
    return f"{name}_" if hasattr(BaseModel, name) else name


def field_line(name: str, schema: dict[str, Any], required: bool) -> str:
    python = python_name(name)
    kind = annotation(schema)
    options = [] if python == name else [f"alias={name!r}"]
    if not required:
        kind = kind if kind.endswith("| None") or kind in ("Any", "None") else f"{kind} | None"
        options.insert(0, "None")
    if not options:
        return f"    {python}: {kind}"
    if options == ["None"]:
        return f"    {python}: {kind} = None"
    return f"    {python}: {kind} = Field({', '.join(options)})"


def model_source(name: str, schema: dict[str, Any]) -> str:
    lines = [f"class {class_name(name)}(ApiModel):"]
    doc = (schema.get("description") or "").strip().splitlines()
    if doc:
        lines.append(f'    """{doc[0].replace(chr(34) * 3, "")}"""')
    required = set(schema.get("required", []))
    properties = schema.get("properties", {})
    lines += [field_line(n, s, n in required) for n, s in properties.items()]
    if len(lines) == 1 or (len(lines) == 2 and doc):
        lines.append("    pass")
    return "\n".join(lines)


def generate() -> str:
    from api.app import create_app

    schemas = create_app().openapi()["components"]["schemas"]
    models = [model_source(n, schemas[n]) for n in sorted(schemas, key=class_name)]
    names = sorted(class_name(n) for n in schemas)
    rebuild = "\n".join(f"{n}.model_rebuild()" for n in names)
    return HEADER + "\n\n" + "\n\n\n".join(models) + "\n\n\n" + rebuild + "\n"


def main() -> None:
    text = generate()
    if "--check" in sys.argv:
        sys.exit(0 if TARGET.exists() and TARGET.read_text() == text else 1)
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
