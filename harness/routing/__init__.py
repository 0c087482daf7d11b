"""The learned router (``[harness.router] strategy = "learned"``): a small classifier over
the base model's representation of a turn, trained from the log, gated and promoted.

- ``examples``: turns whose specialist is known, read from the log: a harness task's
  own specialist (recorded with its ``turn.user``), or the specialist that answered a
  turn whose reward came out at least ``min_reward``. Each turn is on the side of the
  split its user text falls on (``contract.split``'s rule: a one-turn session's side), so
  what a gate held out is never trained on.
- ``classifier``: the representation (the base model's last hidden state, averaged over
  the turn's tokens) and a multinomial logistic regression over it, saved as an artifact.
- ``gate``: held-out routing accuracy with its interval, against the router serving now.
- ``events``: router versions and promotions are events on ``router:<contract>``.
- ``training``: the whole run, from the log to a registered (and perhaps promoted)
  version.

The text a router reads is the gateway's: the client's system messages, then the
user's last message (``routing_input``); a learned router reads its last ``MAX_CHARS``
characters (``learned_input``, what ``route.decided`` records as ``routed_on``), of which
the last ``classifier.MAX_TOKENS`` tokens count.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_CHARS = 4000  # what route.decided records of the text it routed on, and a learned router reads


def routing_input(systems: Sequence[str], user: str) -> str:
    """What a router reads of a turn: the application's system messages and the user's
    last message."""
    return "\n".join([*systems, user])


def learned_input(text: str) -> str:
    """Its end (the user's message is there), as ``route.decided`` records it
    (``routed_on``): a learned router reads exactly what the log keeps."""
    return text[-MAX_CHARS:]
