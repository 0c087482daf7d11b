"""Which side of the train/held-out split a subject is on: a rule on the subject alone.

A subject's side is the same under every contract and every version, so that what one
contract's gate held out can never become another contract's (or a later version's)
training example. The rule hashes the subject's user text (every user message of the
subject, as the ``user_text`` input variable holds it), or its id when it has none:
every answer to the same prompt (a harness sampling k answers per task) lands on the
same side, and a held-out prompt is never trained on under any contract.

Split rule 2. Before it, each contract's ``[evaluation.split]`` section decided (its own
fraction, seed, and subject id or user text), so one subject could be held out under one
contract and trained on under another. The seed and fraction here are those of the
example harness contract (``examples/contracts/harness.toml``: ``by = "user_text"``, seed
20261201, fraction 0.5), under which the demo's experience was split, so those rewards
keep their sides. Reward records keep the split they were made with; the trainer uses
each subject's first reward's side (``trainer.datasets.sides``), so rewards made under
rule 1 that disagree with it are read correctly and never used on the other side. Pure.
"""

from __future__ import annotations

import hashlib

SPLIT_RULE = 2
SPLIT_SEED = 20261201
HELD_OUT_FRACTION = 0.5
TRAIN, HELD_OUT = "train", "held_out"


def split_key(subject_id: str, user_text: str) -> str:
    """What the rule hashes: the user text, or the subject id when there is none."""
    return user_text if user_text.strip() else subject_id


def subject_split(subject_id: str, user_text: str) -> str:
    """``"held_out"`` or ``"train"``: the subject's side under every contract."""
    return split_for(split_key(subject_id, user_text), HELD_OUT_FRACTION, SPLIT_SEED)


def split_for(key: str, fraction: float, seed: int) -> str:
    """`"held_out"` for about `fraction` of keys, `"train"` for the rest; pure.

    sha256 rather than Python's `hash`, which is salted per process: every worker, and
    every re-evaluation years later, must put a subject on the same side.
    """
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    position = int.from_bytes(digest[:8], "big") / 2**64
    return HELD_OUT if position < fraction else TRAIN
