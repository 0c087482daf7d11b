"""What a model is given as its prompt: one rendering for serving, training and the gate.

An example that carries chat ``messages`` (the harness records them: the system message,
example exchanges, the user's turns) is rendered with the tokenizer's own chat template,
ending where the assistant's answer begins, exactly as the harness served it. A tokenizer
without a template (the tiny test model) gets a plain transcript of the same messages.
An example without messages (history recorded by other clients) keeps its transcript
prompt (``User: … Assistant: ``, see ``trainer.datasets.manifest``), after a
beginning-of-sequence token as before.

Training a successor on a prompt in another format than the one it is served with would
teach it little that serving can use; this module is why both ends agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Messages = Sequence[Mapping[str, str]]
ROLES = {"system": "System", "user": "User", "assistant": "Assistant"}


def has_template(tokenizer: Any) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def render_messages(tokenizer: Any, messages: Messages) -> str:
    """The prompt text of ``messages``, ending where the assistant's answer starts."""
    if has_template(tokenizer):
        text = tokenizer.apply_chat_template([dict(m) for m in messages], tokenize=False,
                                             add_generation_prompt=True)
        return str(text)
    lines = [f"{ROLES.get(m['role'], m['role'])}: {m['content']}" for m in messages]
    return "\n".join([*lines, "Assistant: "])


def prompt_ids(tokenizer: Any, prompt: str, messages: Messages | None = None) -> list[int]:
    """Token ids of the prompt as the model sees it: rendered ``messages`` when given,
    else ``prompt``; a beginning-of-sequence token first unless a chat template wrote its
    own markers."""
    if messages:
        text = render_messages(tokenizer, messages)
        bos = [] if has_template(tokenizer) else _bos(tokenizer)
    else:
        text, bos = prompt, _bos(tokenizer)
    return bos + list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _bos(tokenizer: Any) -> list[int]:
    return [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
