"""Signed notes and their keys, checked against the Go implementation's published vectors.

PETER_* and the signed text are the test key and note of golang.org/x/mod/sumdb/note
(``note_test.go`` and the package documentation): Ed25519 signatures are deterministic,
so our signature over the same text with the same key must be byte-for-byte theirs.
"""

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audit.keys import KeyFormatError, SigningKey, VerifierKey
from audit.note import NoteError, open_note, parse_note, sign_note

PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
PETER_SIG = ("\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKv"
             "qfqdngotpRZb6KE6RyyBwJnAM=\n")
ENOCH_SIG = ("\u2014 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTG"
             "wnWLox33WWd1RvMc+QQ=\n")


def test_the_go_key_and_note_reproduce_exactly():
    key = SigningKey.parse(PETER_SKEY)
    assert key.skey() == PETER_SKEY
    assert key.verifier().vkey() == PETER_VKEY and key.key_id == 0xC74F20A3
    assert sign_note(TEXT, key) == TEXT + "\n" + PETER_SIG


def test_a_go_signed_note_opens_and_unknown_signers_are_ignored():
    note = open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [VerifierKey.parse(PETER_VKEY)])
    assert note.text == TEXT
    assert [s.name for s in note.verified] == ["PeterNeumann"]
    assert [s.name for s in note.signatures] == ["PeterNeumann", "EnochRoot"]


def test_a_note_no_known_key_signed_is_refused():
    with pytest.raises(NoteError, match="not signed by any known key"):
        open_note(TEXT + "\n" + ENOCH_SIG, [VerifierKey.parse(PETER_VKEY)])
    with pytest.raises(NoteError, match="not signed by any known key"):
        open_note(TEXT + "\n" + PETER_SIG, [SigningKey.generate("PeterNeumann").verifier()])


def test_a_changed_text_or_signature_is_refused():
    peter = [VerifierKey.parse(PETER_VKEY)]
    with pytest.raises(NoteError, match="invalid signature"):
        open_note(TEXT.replace("answer", "answeR") + "\n" + PETER_SIG, peter)
    with pytest.raises(NoteError, match="invalid signature"):
        open_note(TEXT + "\n" + PETER_SIG[:60] + "ABCD" + PETER_SIG[60:], peter)


def test_round_trip_with_a_fresh_key_and_any_changed_byte_fails():
    key = SigningKey.generate("hcp.example/log")
    signed = sign_note("hello\nworld\n", key)
    assert open_note(signed.encode(), [key.verifier()]).text == "hello\nworld\n"
    raw = signed.encode()
    for i in range(len(raw)):
        changed = raw[:i] + bytes([raw[i] ^ 0x01]) + raw[i + 1:]
        with pytest.raises(NoteError):
            open_note(changed, [key.verifier()])


@pytest.mark.parametrize("message", [
    TEXT,
    TEXT + "\n",
    TEXT + "\n" + PETER_SIG[:-1],
    "\x01" + TEXT + "\n" + PETER_SIG,
    TEXT + "\n" + "\u2014 Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngot"
                  "pRZb6KE6RyyBwJnAM=\n",
    TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
    TEXT + "\n" + "- PeterNeumann " + PETER_SIG.split(" ")[2],
    TEXT + "\n" + "\u2014 PeterNeumann AAAA\n",
    TEXT + "\n" + PETER_SIG * 101,
])
def test_malformed_notes_are_refused(message):
    with pytest.raises(NoteError):
        parse_note(message)


def test_signing_needs_a_newline_at_the_end_and_a_key():
    key = SigningKey.generate("a.example/log")
    with pytest.raises(NoteError, match="newline"):
        sign_note("no newline", key)
    with pytest.raises(NoteError, match="at least one key"):
        sign_note("text\n")


def test_invalid_utf8_is_refused():
    with pytest.raises(NoteError, match="UTF-8"):
        parse_note(b"\xff" + (TEXT + "\n" + PETER_SIG).encode())


def test_verifier_key_manglings_are_refused():
    VerifierKey.parse(PETER_VKEY)
    raw = PETER_VKEY
    for i in range(len(raw)):
        for j in range(i + 1, len(raw) + 1):
            if (i, j) != (0, len(raw)):
                with pytest.raises(KeyFormatError):
                    VerifierKey.parse(raw[i:j])
    for i in range(len(raw)):
        with pytest.raises(KeyFormatError):
            VerifierKey.parse(raw[:i] + chr(ord(raw[i]) + 1) + raw[i + 1:])


def test_signing_key_manglings_are_refused():
    for i in range(len(PETER_SKEY)):
        with pytest.raises(KeyFormatError):
            SigningKey.parse(PETER_SKEY[:i] + chr(ord(PETER_SKEY[i]) + 1) + PETER_SKEY[i + 1:])
    with pytest.raises(KeyFormatError):
        SigningKey.parse(PETER_SKEY[:-4])


def test_pem_and_openssh_encodings_round_trip():
    key = SigningKey.generate("hcp.example/log")
    vkey = key.verifier()
    assert SigningKey.load(key.private_pem(), "hcp.example/log") == key
    assert SigningKey.load(key.skey().encode()) == key
    openssh = Ed25519PrivateKey.from_private_bytes(key.seed).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption())
    assert SigningKey.load(openssh, "hcp.example/log") == key
    assert VerifierKey.load(vkey.public_pem().decode(), "hcp.example/log") == vkey
    assert VerifierKey.load(vkey.openssh(), "hcp.example/log") == vkey
    assert VerifierKey.load(vkey.vkey() + "\n") == vkey
    assert "seed" not in repr(key)


def test_loading_refuses_wrong_names_and_missing_names():
    key = SigningKey.generate("a.example/log")
    with pytest.raises(KeyFormatError, match="expected"):
        SigningKey.load(key.skey().encode(), "b.example/log")
    with pytest.raises(KeyFormatError, match="name"):
        SigningKey.load(key.private_pem())
    with pytest.raises(KeyFormatError, match="expected"):
        VerifierKey.load(key.verifier().vkey(), "b.example/log")
    with pytest.raises(KeyFormatError, match="unreadable"):
        SigningKey.load(b"-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n", "x")


@pytest.mark.parametrize("name", ["", "has space", "a+b", "tab\there", "nbsp\u00a0"])
def test_invalid_key_names(name):
    with pytest.raises(KeyFormatError):
        SigningKey.generate(name)
