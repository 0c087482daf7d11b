"""A hostile tenant against POST /v1/chat/completions: one decoding thread answers every
tenant, so nothing one request carries may stop it or make others wait for nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chat_world import TIMEOUT_S, ChatWorld, chat_world

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[ChatWorld]:
    with chat_world(tmp_path_factory.mktemp("chat"), sqlite_template) as found:
        yield found


@pytest.mark.parametrize("seed", [2**64, 2**63, -(2**63) - 1, 10**30])
def test_a_seed_outside_64_bits_is_refused_and_chat_goes_on_for_everyone(
        world: ChatWorld, seed: int) -> None:
    attacker, victim = world.key("mallory"), world.key("acme")
    refused = world.chat(attacker, seed=seed)
    assert refused.status_code == 400, refused.text  # OpenAI's status for an invalid request
    assert refused.json()["error"]["field"] == "seed"
    started = time.monotonic()
    answered = world.chat(victim)
    assert answered.status_code == 200, answered.text
    assert time.monotonic() - started < TIMEOUT_S
    assert world.client.get("/healthz").json()["checks"]["chat"]["status"] == "ok"


def test_the_widest_64_bit_seeds_are_served(world: ChatWorld) -> None:
    auth = world.key("acme")
    for seed in (2**63 - 1, -(2**63)):
        answered = world.chat(auth, seed=seed, temperature=1.0)
        assert answered.status_code == 200, answered.text


@pytest.mark.parametrize(("field", "value"), [
    ("max_tokens", 2**70), ("max_completion_tokens", 2**70), ("model", "m" * 10_000),
    ("user", "u" * 10_000), ("stop", ["s" * 10_000]), ("tools", [
        {"type": "function", "function": {"name": f"t{i}"}} for i in range(1000)])])
def test_an_unbounded_request_field_is_a_400_naming_it(world: ChatWorld, field: str,
                                                       value: object) -> None:
    refused = world.chat(world.key("mallory"), **{field: value})
    assert refused.status_code == 400, refused.text  # OpenAI's status for an invalid request
    assert refused.json()["error"]["field"].startswith(field)


def test_a_conversation_longer_than_any_context_is_refused_before_it_is_tokenised(
        world: ChatWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    import trainer.ml.prompts as prompts

    tokenised: list[int] = []
    real = prompts.prompt_ids

    def spy(tokenizer: object, prompt: str, messages: list[dict[str, str]] | None = None) -> list[int]:
        tokenised.append(sum(len(m["content"]) for m in messages or []))
        return real(tokenizer, prompt, messages)

    monkeypatch.setattr(prompts, "prompt_ids", spy)
    attacker, victim = world.key("mallory"), world.key("acme")
    refused = world.chat(attacker, text="x" * 4_000_000)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["field"] == "messages"
    assert "context" in refused.json()["error"]["message"]
    assert world.chat(victim).status_code == 200
    assert tokenised and max(tokenised) < 1000  # only the victim's conversation was tokenised


def test_a_later_turn_with_a_history_past_the_bound_is_refused_and_nothing_is_recorded(
        world: ChatWorld) -> None:
    """Every user turn records the conversation before it: a history of many small messages
    past the conversation bound is refused whole, before anything is stored."""
    from sqlalchemy import func, select

    from events.tables import events

    def stored() -> int:
        with world.container.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(events)).scalar_one())

    history = [{"role": role, "content": "y" * 2_000}
               for _ in range(1_100) for role in ("user", "assistant")]
    attacker = world.key("mallory")  # a key is an event of its own: made before counting
    before = stored()
    refused = world.chat(attacker, messages=[*history, {"role": "user", "content": "and now?"}])
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["field"] == "messages"
    assert stored() == before
    assert world.chat(world.key("acme")).status_code == 200
