"""`genui`: describe a small screen in words; the answer is a JSON UI spec.

Where the family comes from: structured-output tasks with a fixed JSON Schema (the way
generative-UI systems such as Vercel's json-render or A2UI constrain a model to a
component catalogue), reduced to a flat list of labelled components. The request names
2-5 components in order; the spec must validate against `UI_SCHEMA` and contain exactly
those components, in that order, with those labels. One fixed example exchange shows
the shape; the catalogue is in the system message.
"""

from __future__ import annotations

import json
import random

from harness.tasks import Task, make_task

KINDS = {  # component type -> how a request names it
    "heading": "a heading",
    "text_field": "a text field",
    "password_field": "a password field",
    "checkbox": "a checkbox",
    "slider": "a slider",
    "button": "a button",
}
UI_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"components": {"type": "array", "minItems": 1, "maxItems": 12, "items": {
        "type": "object",
        "properties": {"type": {"enum": sorted(KINDS)},
                       "label": {"type": "string", "minLength": 1, "maxLength": 40}},
        "required": ["type", "label"], "additionalProperties": False}}},
    "required": ["components"],
    "additionalProperties": False,
}
LABELS = {
    "heading": ["Settings", "Profile", "Checkout", "Sign up", "Feedback", "Search", "Alerts"],
    "text_field": ["Email", "Name", "City", "Phone", "Address", "Company", "Query"],
    "password_field": ["Password", "PIN", "Secret"],
    "checkbox": ["Remember me", "Subscribe", "Accept terms", "Dark mode", "Notify me"],
    "slider": ["Volume", "Brightness", "Budget", "Speed", "Zoom"],
    "button": ["Save", "Submit", "Join", "Cancel", "Next", "Update", "Send"],
}
SYSTEM = ("You write UI specs as JSON: {\"components\": [{\"type\": ..., \"label\": ...}]}. "
          "Component types: " + ", ".join(KINDS) + ". Reply with the JSON only.")
SHOT = ('A heading "Login", a text field "User" and a button "Go".',
        json.dumps({"components": [{"type": "heading", "label": "Login"},
                                   {"type": "text_field", "label": "User"},
                                   {"type": "button", "label": "Go"}]}))


def genui_task(rng: random.Random) -> Task:
    n = rng.randint(2, 5)
    kinds = [rng.choice(sorted(KINDS)) for _ in range(n)]
    comps = [{"type": k, "label": rng.choice(LABELS[k])} for k in kinds]
    parts = [f'{KINDS[c["type"]]} "{c["label"]}"' for c in comps]
    request = ", ".join(parts[:-1]) + " and " + parts[-1] + "."
    request = request[0].upper() + request[1:]
    check = {"kind": "ui_spec", "schema": UI_SCHEMA, "expect": comps}
    return make_task("genui", "ui_spec", request, check, system=SYSTEM, shots=(SHOT,))
