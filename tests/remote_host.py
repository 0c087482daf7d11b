"""A serving host elsewhere, with nothing but the API: hcp_client fetches an adapter and the
base model its ``adapter_config.json`` names (both hash-checked), stock peft loads them
from the directory it runs in, and the host answers a turn the server recorded again,
greedily, with the adapter and with the bare base. No module of the server is imported.

    cd EMPTY_DIR && python PATH/TO/tests/remote_host.py URL KEY ADAPTER_ID STREAM_ID

Prints one JSON object: ``adapter_text``, ``base_text``, ``base_model_name_or_path``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch
from hcp_client import Client
from peft import AutoPeftModelForCausalLM
from transformers import AutoTokenizer

SERVER_PACKAGES = {"kernel", "events", "contract", "evaluators", "trainer", "audit", "access",
                   "harness", "serving", "integrations", "hcp", "console", "api", "cli"}
ROLES = {"system": "System", "user": "User", "assistant": "Assistant"}


def prompt_ids(tok: Any, messages: list[dict[str, str]]) -> list[int]:
    """The rendering docs/integrations.md gives: the tokenizer's chat template when it has
    one, else a plain transcript after the beginning-of-sequence token."""
    if tok.chat_template:
        return list(tok.apply_chat_template(messages, add_generation_prompt=True))
    text = "\n".join([f"{ROLES[m['role']]}: {m['content']}" for m in messages] + ["Assistant: "])
    bos = [tok.bos_token_id] if tok.bos_token_id is not None else []
    return bos + list(tok(text, add_special_tokens=False)["input_ids"])


def greedy(model: Any, tok: Any, ids: list[int], new_tokens: int) -> str:
    out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                         max_new_tokens=new_tokens, do_sample=False, pad_token_id=tok.eos_token_id)
    return str(tok.decode(out[0, len(ids):], skip_special_tokens=True))


def main() -> None:
    url, key, adapter_id, stream_id = sys.argv[1:5]
    here = Path.cwd()
    with Client(url, key) as hcp:
        adapter = hcp.adapter(adapter_id)
        hcp.download_base_model(adapter.base_model, here)  # as ./<name>, the name the config gives
        adapter_dir = hcp.download_adapter(adapter_id, here / "adapters")
        turn = next(e for e in hcp.iter_stream(stream_id) if e.type == "turn.user")
        said = next(e for e in hcp.iter_stream(stream_id) if e.type == "turn.assistant")
    config = json.loads((adapter_dir / "adapter_config.json").read_text())
    model = AutoPeftModelForCausalLM.from_pretrained(str(adapter_dir.relative_to(here)),
                                                     local_files_only=True)
    model.eval()
    tok = AutoTokenizer.from_pretrained(config["base_model_name_or_path"], local_files_only=True)
    messages = [*turn.payload["context"], {"role": "user", "content": turn.payload["text"]}]
    ids, budget = prompt_ids(tok, messages), int(said.payload["tokens"])
    with torch.no_grad():
        adapter_text = greedy(model, tok, ids, budget)
        with model.disable_adapter():
            base_text = greedy(model, tok, ids, budget)
    imported = sorted({m.split(".")[0] for m in sys.modules} & SERVER_PACKAGES)
    assert not imported, f"the remote host imported the server's {imported}"
    print(json.dumps({"adapter_text": adapter_text, "base_text": base_text,
                      "base_model_name_or_path": config["base_model_name_or_path"]}))


if __name__ == "__main__":
    main()
