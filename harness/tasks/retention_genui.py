"""The `genui` retention set: small screens asked for the way users write them.

Where it comes from: how people describe a small form to a UI assistant when no template
guides them: components "called" something, a field "for" something, a form spec as
``kind "label"`` pairs, what the user fills in and then presses, a conversational request,
an arrow-separated flow. Mostly one input and its button (what users ask for most, and
what a 135M base model can sometimes do). None of these is a phrasing of the
``genui`` templates (seen or unseen); the answer is judged as the family's is (the JSON
Schema and the components asked for, in order, with those labels), with the family's
system message and example exchange, as the specialist is served. Its tasks are never
served for experience, so they are never trained on: every gate answers the same fixed
draw with parent and successor (``harness.probes``), and a successor that forgets what
the base could do here is not promoted. Pure.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from harness.tasks import Task, make_task
from harness.tasks.genui import KINDS, LABELS, SHOT, SYSTEM, UI_SCHEMA, Comps
from harness.tasks.templates import Template, balanced

NOUNS = {k: v.split(" ", 1)[1] for k, v in KINDS.items()}  # "text field", "button", ...


def _components(rng: random.Random) -> Comps:
    """A screen as users ask for one: a form of one input, sometimes two, that ends with its
    button, sometimes under a heading."""
    inputs = sorted(set(KINDS) - {"heading", "button"})
    shape = rng.random()
    kinds = [*rng.sample(inputs, 2 if shape < 0.15 else 1), "button"]
    kinds = (["heading"] if shape > 0.9 else []) + kinds
    return [{"type": k, "label": rng.choice(LABELS[k])} for k in kinds]


def _article(word: str) -> str:
    return "an" if word[0].lower() in "aeiou" else "a"


def _and(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def called(comps: Comps) -> str:
    parts = [f'{_article(NOUNS[c["type"]])} {NOUNS[c["type"]]} called "{c["label"]}"' for c in comps]
    return f"Add {_and(parts)}."


def purpose(comps: Comps) -> str:
    parts = [f'{_article(NOUNS[c["type"]])} {NOUNS[c["type"]]} for {c["label"]}' for c in comps]
    return f"Make a page with {_and(parts)}, in that order."


def form(comps: Comps) -> str:
    return "Create a form: " + ", ".join(f'{NOUNS[c["type"]]} "{c["label"]}"' for c in comps) + "."


def press(comps: Comps) -> str:
    *fields, last = comps
    said = _and([f'{NOUNS[c["type"]]} "{c["label"]}"' for c in fields])
    return (f"Please make a screen where the user fills in the {said} and then presses the "
            f'{NOUNS[last["type"]]} "{last["label"]}".')


def conversational(comps: Comps) -> str:
    first, *middle, last = comps
    said = [f'start with {_article(NOUNS[first["type"]])} {NOUNS[first["type"]]} that says '
            f'"{first["label"]}"']
    said += [f'then have {_article(NOUNS[c["type"]])} {NOUNS[c["type"]]} called "{c["label"]}"'
             for c in middle]
    said.append(f'end with {_article(NOUNS[last["type"]])} {NOUNS[last["type"]]} labelled '
                f'"{last["label"]}"')
    return f"Could you make me a UI? It should {', '.join(said)}."


def arrows(comps: Comps) -> str:
    flow = " -> ".join(f'{NOUNS[c["type"]]} "{c["label"]}"' for c in comps)
    return f"Screen layout: {flow}"


PHRASINGS: dict[str, Callable[[Comps], str]] = {
    "called": called, "purpose": purpose, "form": form, "press": press,
    "conversational": conversational, "arrows": arrows,
}


def _template(name: str, say: Callable[[Comps], str]) -> Template:
    def task(rng: random.Random) -> Task:
        comps = _components(rng)
        check: dict[str, Any] = {"kind": "ui_spec", "schema": UI_SCHEMA, "expect": comps}
        return make_task("genui", "retention", say(comps), check, system=SYSTEM, shots=(SHOT,))

    return Template(f"genui_retention.{name}", name, task)


TEMPLATES = [_template(name, say) for name, say in PHRASINGS.items()]


def genui_retention_tasks(n: int, seed: int) -> list[Task]:
    """The set: ``n`` distinct tasks spread evenly over the phrasings."""
    return balanced(TEMPLATES, n, seed)
