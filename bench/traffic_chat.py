"""One simulated user's conversation with `hcp serve`, through the stock ``openai`` package
only: the question, the user's reaction, and what the bench keeps of it (the user's own
verdict, which the server never sees)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from traffic_users import DISPUTE, Behaviour, User


@dataclass
class Talk:
    user_id: str
    kind: str
    side: str  # the server's split of the question: train | held_out
    generation: int
    question: str
    answer: str
    passed: bool  # the user's hidden checker on the first answer
    completion_id: str
    session: str
    adapter_version: str
    reaction: str
    second_answer: str | None = None  # after a regeneration
    second_passed: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def talk(client: Any, user: User, side: str, generation: int, behaviour: Behaviour,
         temperature: float | None = None) -> Talk:
    """Ask, check, react; the user then leaves (the session ends by the idle timeout)."""
    messages = [{"role": "user", "content": user.question}]
    raw = client.chat.completions.with_raw_response.create(
        model="chat", messages=messages, **({"temperature": temperature} if temperature is not None else {}))
    session = raw.headers["x-hcp-session"]
    first = raw.parse()
    answer = first.choices[0].message.content or ""
    good = user.passes(answer)
    reaction = behaviour.react(user, good, 0)
    said = Talk(user.user_id, user.kind, side, generation, user.question, answer, good, first.id,
                session, raw.headers.get("x-hcp-adapter-version", ""), reaction.kind)
    if reaction.kind == "regenerate":
        again = client.chat.completions.create(
            model="chat", messages=messages, temperature=behaviour.sample_temperature,
            extra_headers={"X-HCP-Session": session})
        said.second_answer = again.choices[0].message.content or ""
        said.second_passed = user.passes(said.second_answer)
        second = behaviour.react(user, said.second_passed, 1)
        _feedback(client, session, again.id, rating=second.rating)
    elif reaction.kind == "dispute":
        client.chat.completions.create(
            model="chat", extra_headers={"X-HCP-Session": session},
            messages=[*messages, {"role": "assistant", "content": answer},
                      {"role": "user", "content": DISPUTE}])
    elif reaction.kind == "correct":
        _feedback(client, session, first.id, rating=reaction.rating, correction=user.ideal())
    elif reaction.rating is not None:
        _feedback(client, session, first.id, rating=reaction.rating)
    return said


def _feedback(client: Any, session: str, completion_id: str, rating: float | None = None,
              correction: str | None = None) -> None:
    """``POST /v1/feedback``, sent with the ``openai`` client's own ``post``."""
    if rating is None and correction is None:
        return
    body = {"session": session, "completion_id": completion_id,
            **({"rating": rating} if rating is not None else {}),
            **({"correction": correction} if correction is not None else {})}
    client.post("/feedback", body=body, cast_to=object)
