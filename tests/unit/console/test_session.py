"""Console sessions: signed cookies that expire, cannot be forged, and carry no secret;
CSRF tokens and dry-run proofs bound to one sign-in."""

from __future__ import annotations

import pytest

from console.session import SessionCodec

SECRET = b"0123456789abcdef0123456789abcdef"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_cookie_opens_to_its_session_until_it_expires():
    clock = Clock()
    codec = SessionCodec(SECRET, 1800, clock)
    cookie, issued = codec.issue("k1", "ops", frozenset({"registry:read"}))
    opened = codec.open(cookie)
    assert opened == issued and opened.actor == "key:ops" and opened.allows("registry:read")
    assert not opened.allows("registry:write")
    clock.now += 1799
    assert codec.open(cookie) is not None
    clock.now += 2
    assert codec.open(cookie) is None


@pytest.mark.parametrize("tamper", [
    lambda c: c.replace(".", "x.", 1),
    lambda c: c[:-2] + ("AA" if not c.endswith("AA") else "BB"),
    lambda c: "",
    lambda c: c + ".extra",
])
def test_a_tampered_cookie_opens_to_nothing(tamper):
    codec = SessionCodec(SECRET, 1800)
    cookie, _ = codec.issue("k1", None, frozenset({"admin"}))
    assert codec.open(tamper(cookie)) is None


def test_another_secret_or_a_widened_scope_list_is_refused():
    codec = SessionCodec(SECRET, 1800)
    cookie, _ = codec.issue("k1", None, frozenset({"registry:read"}))
    assert SessionCodec(b"another secret, long enough", 1800).open(cookie) is None
    import base64
    import json
    payload, signature = cookie.split(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data["s"] = ["admin"]
    widened = base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    assert codec.open(f"{widened}.{signature}") is None


def test_csrf_tokens_and_proofs_belong_to_one_sign_in():
    codec = SessionCodec(SECRET, 1800)
    _, first = codec.issue("k1", None, frozenset({"admin"}))
    _, second = codec.issue("k1", None, frozenset({"admin"}))
    token = codec.csrf_token(first)
    assert codec.csrf_ok(first, token) and not codec.csrf_ok(second, token)
    assert not codec.csrf_ok(first, None) and not codec.csrf_ok(first, "")
    proof = codec.proof(first, "dry-run:default@3:abc")
    assert codec.proof_ok(first, "dry-run:default@3:abc", proof)
    assert not codec.proof_ok(first, "dry-run:default@3:abd", proof)
    assert not codec.csrf_ok(first, proof)  # a proof is not a CSRF token, nor the reverse


def test_a_short_secret_is_refused():
    with pytest.raises(ValueError):
        SessionCodec(b"short", 60)


def test_a_keys_tenant_travels_with_its_session():
    codec = SessionCodec(SECRET, 1800)
    cookie, _ = codec.issue("k1", "ops", frozenset({"rewards:read"}), tenant="acme")
    assert codec.open(cookie).tenant == "acme"
    cookie, _ = codec.issue("k2", "ops", frozenset({"rewards:read"}))
    assert codec.open(cookie).tenant is None


def test_a_cookie_carries_the_keys_sign_out_generation_it_was_issued_under():
    codec = SessionCodec(SECRET, 1800)
    cookie, issued = codec.issue("k1", "ops", frozenset({"admin"}), generation=42)
    assert codec.open(cookie) == issued and issued.generation == 42
    # A cookie signed before sessions carried a generation says nothing about sign-outs:
    # it opens to nothing (its holder signs in again).
    import base64
    import hashlib
    import hmac
    import json
    old = base64.urlsafe_b64encode(json.dumps({"k": "k1", "l": None, "s": ["admin"], "e": 2**40,
                                               "n": "x", "t": None}).encode()).rstrip(b"=").decode()
    mac = hmac.new(SECRET, b"session\x00" + old.encode(), hashlib.sha256).digest()
    assert codec.open(f"{old}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}") is None
