"""`agent`: pick the right tool from an allowlist and fill in its arguments, as JSON.

Where the family comes from: single-step function calling as in BFCL ("simple" and
"multiple" categories) and the Gorilla/ToolBench style: a request, a menu of tools with
JSON Schemas, one call as the answer. Each task lists three tools (the right one and two
distractors, shuffled) in the system message, each with its signature and one example
call (as tool documentation does), shows one example exchange using a distractor (so the
format is demonstrated but the answer is never copied), then asks.
The allowlist travels in the check spec: a call to an unlisted tool is a failure even if
the tool exists. Each target tool is a template; two (``UNSEEN_TOOLS``) are never the
answer of a train task, for the unseen-template measure. The held-out split hashes the
request alone (the subject's split hashes the user message), so a held-out request is
never trained on under another tool menu.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from harness.tasks import Task, make_task
from harness.tasks.templates import UNSEEN, Template, pick

S, INT, N = {"type": "string", "minLength": 1}, {"type": "integer"}, {"type": "number"}


def _tool(sig: str, props: dict[str, Any]) -> dict[str, Any]:
    return {"signature": sig, "schema": {
        "type": "object", "properties": props, "required": list(props),
        "additionalProperties": False}}


TOOLS: dict[str, dict[str, Any]] = {
    "weather": _tool('weather(city: string, unit: "celsius" or "fahrenheit")',
                     {"city": S, "unit": {"enum": ["celsius", "fahrenheit"]}}),
    "timer": _tool("timer(minutes: integer)", {"minutes": {**INT, "minimum": 1}}),
    "email": _tool("email(to: string, subject: string)", {"to": S, "subject": S}),
    "search": _tool("search(query: string)", {"query": S}),
    "calendar": _tool("calendar(title: string, date: string YYYY-MM-DD)",
                      {"title": S, "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}}),
    "currency": _tool("currency(amount: number, source: string, target: string)",
                      {"amount": N, "source": S, "target": S}),
    "music": _tool("music(artist: string)", {"artist": S}),
    "translate": _tool("translate(text: string, language: string)",
                       {"text": S, "language": S}),
}
CITIES = ["Oslo", "Rome", "Lima", "Tokyo", "Cairo", "Dublin", "Quito", "Perth", "Seoul"]
NAMES = ["ann", "bob", "carla", "dev", "eli", "fay", "gus"]
TOPICS = ["Report", "Lunch", "Invoice", "Meeting notes", "Holiday", "Budget"]
THINGS = ["jazz history", "tide tables", "sourdough recipes", "bike repair", "moon phases"]
ARTISTS = ["Miles Davis", "Adele", "Bach", "Nina Simone", "Queen", "Björk"]
CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF"]
LANGUAGES = ["French", "German", "Spanish", "Italian"]
PHRASES = ["good morning", "thank you", "where is the station", "see you soon"]
MONTHS = ["January", "February", "March", "April", "May", "June"]


def _request(tool: str, r: random.Random) -> tuple[str, dict[str, Any]]:
    """A natural-language request for `tool` and the arguments it should produce."""
    if tool == "weather":
        c, u = r.choice(CITIES), r.choice(["celsius", "fahrenheit"])
        return r.choice([f"What is the weather in {c} in {u}?",
                         f"How warm is it in {c}? Give it in {u}."]), {"city": c, "unit": u}
    if tool == "timer":
        m = r.randint(2, 90)
        return r.choice([f"Set a timer for {m} minutes.", f"Remind me in {m} minutes."]), {
            "minutes": m}
    if tool == "email":
        to, s = f"{r.choice(NAMES)}@example.com", r.choice(TOPICS)
        return r.choice([f'Email {to} with the subject "{s}".',
                         f'Send a mail titled "{s}" to {to}.']), {"to": to, "subject": s}
    if tool == "search":
        q = r.choice(THINGS)
        return r.choice([f"Search the web for {q}.", f"Look up {q} online."]), {"query": q}
    if tool == "calendar":
        topic, mi, d = r.choice(TOPICS), r.randint(1, 6), r.randint(1, 28)
        date = f"2025-{mi:02d}-{d:02d}"
        return f'Put "{topic}" in my calendar on {MONTHS[mi - 1]} {d}, 2025.', {
            "title": topic, "date": date}
    if tool == "currency":
        a, s, t = r.randint(5, 500), *r.sample(CURRENCIES, 2)
        return r.choice([f"Convert {a} {s} to {t}.", f"How much is {a} {s} in {t}?"]), {
            "amount": a, "source": s, "target": t}
    if tool == "music":
        artist = r.choice(ARTISTS)
        return r.choice([f"Play some {artist}.", f"Put on music by {artist}."]), {"artist": artist}
    text, lang = r.choice(PHRASES), r.choice(LANGUAGES)
    return f'Translate "{text}" into {lang}.', {"text": text, "language": lang}


N_LISTED = 3  # tools on the menu: the right one and two distractors


def agent_task_for(target: str) -> Callable[[random.Random], Task]:
    """Tasks whose right answer calls ``target`` (one template per tool)."""

    def task(rng: random.Random) -> Task:
        others = rng.sample(sorted(set(TOOLS) - {target}), N_LISTED - 1)
        return _task(rng, [target, *others])

    return task


def _task(rng: random.Random, listed: list[str]) -> Task:
    target, shot_tools = listed[0], listed[1:]
    rng.shuffle(listed)
    request, args = _request(target, rng)
    system = ("You can call these tools:\n" + "\n".join(_doc(t) for t in listed)
              + "\nAnswer every request with one JSON tool call and nothing else.")
    shots = tuple(_shot(t) for t in shot_tools)
    check = {"kind": "tool_call", "allowed": {t: TOOLS[t]["schema"] for t in listed},
             "expect": {"tool": target, "arguments": args}}
    return make_task("agent", "tool_call", request, check, system=system, shots=shots)


def _shot(tool: str) -> tuple[str, str]:
    request, args = _request(tool, random.Random(tool + ":shot"))  # noqa: S311 (fixed examples)
    return request, _call(tool, args)


def _doc(tool: str) -> str:
    """A tool's line on the menu: its signature and one example call (fixed per tool)."""
    _, args = _request(tool, random.Random(tool + ":doc"))  # noqa: S311 (fixed examples)
    return f"- {TOOLS[tool]['signature']}\n  example: {_call(tool, args)}"


def _call(tool: str, args: dict[str, Any]) -> str:
    return json.dumps({"tool": tool, "arguments": args}, ensure_ascii=False)


# One template per target tool (group: what kind of argument it takes); two tools are
# never the answer in training (they still appear on menus as distractors).
TOOL_GROUPS = {"weather": "places", "timer": "numbers", "email": "messages", "search": "text",
               "calendar": "dates", "currency": "numbers", "music": "text",
               "translate": "messages"}
UNSEEN_TOOLS = ("currency", "translate")
TEMPLATES = [Template(f"agent.{tool}", TOOL_GROUPS[tool], agent_task_for(tool),
                      tool in UNSEEN_TOOLS) for tool in sorted(TOOLS)]
agent_task = pick(TEMPLATES, "seen")
agent_unseen_task = pick(TEMPLATES, UNSEEN)
