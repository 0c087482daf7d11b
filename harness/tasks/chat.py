"""`chat`: answer a plain question under exact, checkable format and length rules.

Where the family comes from: IFEval's "verifiable instructions" (number of bullets,
word limits, letter case, start/end words, forbidden characters), which can be checked
without a judge model. Each task is a short question about an everyday topic plus one or
two rules; each rule kind is a template, and two (``UNSEEN_RULES``) are never asked for
in training. The check judges form only: whether the content is right would need a judge
or user feedback, which the contract's other criteria can add.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from harness.tasks import Task, make_task
from harness.tasks.templates import UNSEEN, Template, pick

TOPICS = ["the moon", "rain", "bread", "bicycles", "the ocean", "sleep", "coffee",
          "volcanoes", "libraries", "honey bees", "winter", "trains", "music", "maps",
          "clouds", "chess", "gardens", "bridges", "owls", "deserts"]
SYSTEM = "You follow formatting instructions exactly. Keep answers short."
# One example exchange: without it the base model ignored nearly every rule (4% passed);
# the rule it demonstrates (a word limit) is one of the family's own.
SHOT = ("Describe tea. Use at most 12 words.",
        "Tea is a warm drink made by steeping leaves in hot water.")
CONFLICTS = [{"bullets", "sentences"}]  # a bullet list is not a count of sentences
QUESTIONS = ["Tell me about {t}.", "Why do people like {t}?", "What should I know about {t}?",
             "Describe {t}."]


RULE_KINDS = ("bullets", "max_words", "lowercase", "starts_with", "no_commas", "ends_with",
              "sentences")
UNSEEN_RULES = ("ends_with", "sentences")  # never asked for in training


def _rule(r: random.Random, kind: str | None = None, kinds: tuple[str, ...] = RULE_KINDS
          ) -> tuple[str, dict[str, Any]]:
    """(instruction text, rule spec for `checks.formats`)."""
    kind = kind or r.choice(kinds)
    if kind == "bullets":
        n = r.randint(2, 3)
        return (f"Answer with exactly {n} bullet points, each on its own line starting "
                f'with "- ", and nothing else.', {"rule": "bullets", "n": n})
    if kind == "max_words":
        n = r.choice([15, 20, 25])
        return f"Use at most {n} words.", {"rule": "max_words", "n": n}
    if kind == "lowercase":
        return "Write only in lowercase letters.", {"rule": "lowercase"}
    if kind == "starts_with":
        w = r.choice(["Indeed", "Well", "Yes", "Sure", "Honestly"])
        return f'Start your answer with the word "{w}".', {"rule": "starts_with", "word": w}
    if kind == "ends_with":
        w = r.choice(["done", "friend", "indeed", "always"])
        return (f'End your answer with the word "{w}".', {"rule": "ends_with", "word": w})
    if kind == "sentences":
        n = r.randint(1, 2)
        s = "sentence" if n == 1 else "sentences"
        return f"Answer in exactly {n} {s}.", {"rule": "sentences", "n": n}
    return "Do not use any commas.", {"rule": "no_commas"}


def chat_task_for(first: str) -> Callable[[random.Random], Task]:
    """Tasks whose (first) rule is ``first``; a second rule, when there is one, is of a
    kind seen in training (or ``first`` again, then dropped)."""
    seen = tuple(k for k in RULE_KINDS if k not in UNSEEN_RULES)

    def task(rng: random.Random) -> Task:
        question = rng.choice(QUESTIONS).format(t=rng.choice(TOPICS))
        rules = [_rule(rng, first)] + ([_rule(rng, kinds=seen)] if rng.random() < 0.25 else [])
        kinds = {spec["rule"] for _, spec in rules}
        if len(kinds) < len(rules) or kinds in CONFLICTS:
            rules = rules[:1]
        prompt = " ".join([question, *(text for text, _ in rules)])
        return make_task("chat", "format_rules", prompt,
                         {"kind": "format_rules", "rules": [spec for _, spec in rules]},
                         system=SYSTEM, shots=(SHOT,))

    return task


TEMPLATES = [Template(f"chat.{kind}", "format", chat_task_for(kind), kind in UNSEEN_RULES)
             for kind in RULE_KINDS]
chat_task = pick(TEMPLATES, "seen")
chat_unseen_task = pick(TEMPLATES, UNSEEN)
