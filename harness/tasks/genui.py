"""`genui`: describe a small screen in words; the answer is a JSON UI spec.

Where the family comes from: structured-output tasks with a fixed JSON Schema (the way
generative-UI systems such as Vercel's json-render or A2UI constrain a model to a
component catalogue), reduced to a flat list of labelled components. The spec must
validate against `UI_SCHEMA` and contain exactly the components asked for, in order,
with those labels. What varies is how a request says it: a plain list, an ordinal
sequence, a bulleted or numbered list, repeated components counted, labels before kinds,
a screen described top to bottom, a purpose-named form. Each of those is a template
(groups ``lists``, ``sequences``, ``forms``); two are held out whole (never trained on)
for the unseen-template measure. One fixed example exchange shows the JSON shape; the
catalogue is in the system message.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from harness.tasks import Task, make_task
from harness.tasks.templates import UNSEEN, Template, pick

KINDS = {  # component type -> how a request names it
    "heading": "a heading",
    "text_field": "a text field",
    "password_field": "a password field",
    "checkbox": "a checkbox",
    "slider": "a slider",
    "button": "a button",
    "dropdown": "a dropdown",
    "toggle": "a toggle",
}
PLURAL = {k: v.split(" ", 1)[1] + "s" for k, v in KINDS.items()}
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
    "heading": ["Settings", "Profile", "Checkout", "Sign up", "Feedback", "Search", "Alerts",
                "Orders", "Billing", "Welcome"],
    "text_field": ["Email", "Name", "City", "Phone", "Address", "Company", "Query", "Title"],
    "password_field": ["Password", "PIN", "Secret", "Passcode"],
    "checkbox": ["Remember me", "Subscribe", "Accept terms", "Dark mode", "Notify me"],
    "slider": ["Volume", "Brightness", "Budget", "Speed", "Zoom", "Age"],
    "button": ["Save", "Submit", "Join", "Cancel", "Next", "Update", "Send", "Pay"],
    "dropdown": ["Country", "Size", "Language", "Plan", "Colour"],
    "toggle": ["Wi-Fi", "Sound", "Auto-save", "Location", "Sync"],
}
SYSTEM = ("You write UI specs as JSON: {\"components\": [{\"type\": ..., \"label\": ...}]}. "
          "Component types: " + ", ".join(KINDS) + ". Reply with the JSON only.")
SHOT = ('A heading "Login", a text field "User" and a button "Go".',
        json.dumps({"components": [{"type": "heading", "label": "Login"},
                                   {"type": "text_field", "label": "User"},
                                   {"type": "button", "label": "Go"}]}))
Comps = list[dict[str, str]]


def _components(rng: random.Random, n: int) -> Comps:
    kinds = [rng.choice(sorted(KINDS)) for _ in range(n)]
    return [{"type": k, "label": rng.choice(LABELS[k])} for k in kinds]


def _named(c: dict[str, str]) -> str:
    return f'{KINDS[c["type"]]} "{c["label"]}"'


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:]


def _and(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def plain(rng: random.Random) -> tuple[str, Comps]:
    comps = _components(rng, rng.randint(2, 5))
    return _sentence(_and([_named(c) for c in comps])) + ".", comps


def ordinal(rng: random.Random) -> tuple[str, Comps]:
    comps = _components(rng, rng.randint(2, 4))
    parts = [f"first {_named(comps[0])}", *[f"then {_named(c)}" for c in comps[1:-1]],
             f"and last {_named(comps[-1])}"]
    return _sentence(", ".join(parts)) + ".", comps


def bulleted(rng: random.Random) -> tuple[str, Comps]:
    comps = _components(rng, rng.randint(2, 5))
    return "A screen with, in order:\n" + "\n".join(f"- {_named(c)}" for c in comps), comps


def numbered(rng: random.Random) -> tuple[str, Comps]:
    comps = _components(rng, rng.randint(2, 5))
    return "Components: " + " ".join(f"{i}. {_named(c)}" for i, c in enumerate(comps, 1)), comps


def counted(rng: random.Random) -> tuple[str, Comps]:
    kind = rng.choice(sorted(KINDS))
    labels = rng.sample(LABELS[kind], rng.randint(2, min(4, len(LABELS[kind]))))
    words = {2: "Two", 3: "Three", 4: "Four"}
    text = f'{words[len(labels)]} {PLURAL[kind]} labelled {_and([f"{x!r}" for x in labels])}.'
    return text.replace("'", '"'), [{"type": kind, "label": x} for x in labels]


def label_first(rng: random.Random) -> tuple[str, Comps]:
    comps = _components(rng, rng.randint(2, 4))
    parts = [f'"{c["label"]}" ({KINDS[c["type"]]})' for c in comps]
    return "In this order: " + ", ".join(parts) + ".", comps


def top_to_bottom(rng: random.Random) -> tuple[str, Comps]:
    comps = _components(rng, 3)
    return (f"A screen with {_named(comps[0])} at the top, {_named(comps[2])} at the bottom "
            f"and {_named(comps[1])} between them."), comps


FORMS = {"sign-in": ("text_field", "password_field", "button"),
         "newsletter": ("text_field", "checkbox", "button"),
         "settings": ("heading", "toggle", "slider", "button"),
         "search": ("text_field", "dropdown", "button"),
         "payment": ("heading", "text_field", "dropdown", "button")}


def purpose_form(rng: random.Random) -> tuple[str, Comps]:
    purpose = rng.choice(sorted(FORMS))
    comps = [{"type": k, "label": rng.choice(LABELS[k])} for k in FORMS[purpose]]
    return (f"A {purpose} form made of {_and([_named(c) for c in comps])}, in that order."), comps


def reversed_order(rng: random.Random) -> tuple[str, Comps]:
    comps = _components(rng, rng.randint(2, 4))
    said = _and([_named(c) for c in reversed(comps)])
    return f"From the bottom of the screen up: {said}. List them top first.", comps


def _template(name: str, group: str, make: Callable[[random.Random], tuple[str, Comps]],
              unseen: bool = False) -> Template:
    def task(rng: random.Random) -> Task:
        request, comps = make(rng)
        check: dict[str, Any] = {"kind": "ui_spec", "schema": UI_SCHEMA, "expect": comps}
        return make_task("genui", group, request, check, system=SYSTEM, shots=(SHOT,))

    return Template(f"genui.{name}", group, task, unseen)


TEMPLATES = [
    _template("plain", "lists", plain), _template("bulleted", "lists", bulleted),
    _template("numbered", "lists", numbered), _template("counted", "lists", counted),
    _template("label_first", "lists", label_first, unseen=True),
    _template("ordinal", "sequences", ordinal),
    _template("top_to_bottom", "sequences", top_to_bottom),
    _template("reversed_order", "sequences", reversed_order, unseen=True),
    _template("purpose_form", "forms", purpose_form),
]
genui_task = pick(TEMPLATES, "seen")
genui_unseen_task = pick(TEMPLATES, UNSEEN)
