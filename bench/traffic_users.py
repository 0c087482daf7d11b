"""The simulated users of bench/traffic.py: what each asks, what it hides, how it reacts.

Every user has a hidden want the server never sees (nothing of it is sent: no task, no
rule in the message, no hint in a header), and its own checker of an answer:

- ``brief``: asks about a topic ("Tell me about owls.") and wants a short answer that
  stays on it: at most 20 words, naming the topic;
- ``sum``: asks for a sum ("What is 37 + 48?") and wants the right number in the answer.

A user asks (through the stock ``openai`` package only), checks the answer, and reacts
as people do, seeded: a good answer is sometimes rated up; a bad one is corrected
(``POST /v1/feedback`` with what it should have been, sent with the same package's
``post``), regenerated (the same question again in the session, sampled), disputed ("No,
that's not what I asked for.") or rated down; then the user leaves, and the session
ends by itself (the contract's idle timeout). Questions are drawn so that a user's side
of the server's split (contract/split.py, the rule the server applies to every subject's
user text) is the one the bench wants: the users held out from training ask only
questions the server holds out.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from contract.split import subject_split

TOPICS = ("the moon", "rain", "bread", "bicycles", "the ocean", "sleep", "coffee", "volcanoes",
          "libraries", "honey bees", "winter", "trains", "music", "maps", "clouds", "chess",
          "gardens", "bridges", "owls", "deserts", "tea", "snow", "rivers", "forests", "kites",
          "lighthouses", "pianos", "tomatoes", "glaciers", "penguins", "cheese", "candles",
          "castles", "dolphins", "mushrooms", "umbrellas", "rainbows", "tigers", "apples",
          "windmills", "comets", "sailing", "pottery", "cactus plants", "hedgehogs", "bees",
          "the desert wind", "lemons", "zebras", "caves", "marathons", "origami", "saffron",
          "thunder", "wolves", "violins", "canals", "lanterns", "ferns", "otters", "tulips",
          "telescopes", "compasses", "pyramids", "coral reefs", "waterfalls", "camels",
          "sunflowers", "parrots", "harbors", "meteors", "glass", "copper", "silk", "salt")
ASKS = ("Tell me about {t}.", "What should I know about {t}?", "Describe {t}.",
        "Why do people like {t}?")
BRIEF_ANSWERS = ("Short answer: {t}, well worth knowing about.",
                 "{T}: interesting, useful and easy to enjoy.",
                 "In a few words: {t}, simple and pleasant.")
MAX_WORDS = 20
DISPUTE = "No, that's not what I asked for."


@dataclass(frozen=True)
class User:
    user_id: str
    kind: str  # "brief" | "sum"
    question: str
    want: dict[str, Any]  # the hidden want: the topic word, or the right sum
    seed: int

    def passes(self, answer: str) -> bool:
        """The user's own checker (the server never sees it)."""
        if self.kind == "sum":
            return str(self.want["sum"]) in re.findall(r"-?\d+", answer)
        words = answer.split()
        return 0 < len(words) <= MAX_WORDS and self.want["word"] in answer.lower()

    def ideal(self) -> str:
        """What the user would have liked: its correction."""
        if self.kind == "sum":
            return f"{self.want['a']} + {self.want['b']} = {self.want['sum']}."
        template = random.Random(self.seed).choice(BRIEF_ANSWERS)
        topic = self.want["topic"]
        return template.replace("{T}", topic[0].upper() + topic[1:]).replace("{t}", topic)


@dataclass(frozen=True)
class Reaction:
    kind: str  # "rate_up", "silent", "correct", "regenerate", "dispute", "rate_down"
    rating: float | None = None


@dataclass
class Behaviour:
    """How often users react which way (seeded per user)."""

    rate_good: float = 0.5  # a good answer is rated up this often (else left in silence)
    correct: float = 0.35  # a bad answer: corrected
    regenerate: float = 0.35  # regenerated
    dispute: float = 0.2  # disputed; the rest are rated down
    sample_temperature: float = 0.8  # of a regeneration

    def react(self, user: User, good: bool, attempt: int) -> Reaction:
        r = random.Random(f"{user.seed}:{attempt}").random()
        if good:
            return Reaction("rate_up", 1.0) if r < self.rate_good else Reaction("silent")
        if attempt > 0:  # a regenerated answer that is still bad: rated down, and the user goes
            return Reaction("rate_down", -1.0)
        for kind, share in (("correct", self.correct), ("regenerate", self.regenerate),
                            ("dispute", self.dispute)):
            if r < share:
                return Reaction(kind, -1.0 if kind == "correct" else None)
            r -= share
        return Reaction("rate_down", -1.0)


@dataclass
class Population:
    seed: int
    used: set[str] = field(default_factory=set)

    def users(self, n: int, side: str, prefix: str, sums: float = 0.3) -> list[User]:
        """``n`` new users whose questions the server's split puts on ``side``
        (``train`` or ``held_out``), a share ``sums`` of them asking sums; no question is
        asked by two users."""
        rng = random.Random(f"{self.seed}:{prefix}:{side}")
        found: list[User] = []
        while len(found) < n:
            user = self._draw(rng, f"{prefix}-{len(found)}", rng.random() < sums)
            if user.question in self.used or subject_split("", user.question) != side:
                continue
            self.used.add(user.question)
            found.append(user)
        return found

    def _draw(self, rng: random.Random, user_id: str, sums: bool) -> User:
        seed = rng.randrange(1 << 30)
        if sums:
            a, b = rng.randint(11, 89), rng.randint(11, 89)
            return User(user_id, "sum", f"What is {a} + {b}?", {"a": a, "b": b, "sum": a + b}, seed)
        topic = rng.choice(TOPICS)
        word = topic.split()[-1]
        word = word[:-1] if word.endswith("s") and not word.endswith("ss") else word
        return User(user_id, "brief", rng.choice(ASKS).format(t=topic),
                    {"topic": topic, "word": word.lower()}, seed)
