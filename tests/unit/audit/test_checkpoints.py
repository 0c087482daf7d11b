import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from audit.checkpoints import (
    Checkpoint,
    CheckpointError,
    export_json,
    load_checkpoints,
    open_checkpoint,
    sign_checkpoint,
)
from audit.keys import SigningKey
from audit.merkle import EMPTY_ROOT

ORIGIN = "hcp.example/events"
KEY = SigningKey.generate(ORIGIN)
HEAD = "ab" * 32
WHEN = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)


def checkpoint(size: int = 1000, root: bytes = b"\x11" * 32) -> Checkpoint:
    return Checkpoint(ORIGIN, size, root, HEAD, WHEN)


def test_the_note_text_is_the_tlog_checkpoint_form():
    assert checkpoint().text() == (
        "hcp.example/events\n1000\nERERERERERERERERERERERERERERERERERERERERERE=\n"
        f"chain-head {HEAD}\ntime 2026-12-01T10:00:00Z\n")


def test_sign_and_open_round_trip():
    signed = sign_checkpoint(checkpoint(), KEY)
    assert signed.note.startswith(checkpoint().text() + "\n\u2014 hcp.example/events ")
    opened = open_checkpoint(signed.note, KEY.verifier())
    assert opened == signed and opened.checkpoint == checkpoint()


def test_time_is_kept_in_utc_to_the_second():
    local = datetime(2026, 12, 1, 12, 0, 0, 999, tzinfo=timezone(timedelta(hours=2)))
    assert Checkpoint(ORIGIN, 0, EMPTY_ROOT, HEAD, local).timestamp == WHEN
    with pytest.raises(CheckpointError, match="timezone"):
        Checkpoint(ORIGIN, 0, EMPTY_ROOT, HEAD, datetime(2026, 12, 1))


def test_a_changed_byte_or_another_key_is_refused():
    note = sign_checkpoint(checkpoint(), KEY).note
    with pytest.raises(CheckpointError, match="signature"):
        open_checkpoint(note.replace("\n1000\n", "\n1001\n"), KEY.verifier())
    with pytest.raises(CheckpointError, match="known key"):
        open_checkpoint(note, SigningKey.generate(ORIGIN).verifier())


def test_a_checkpoint_of_another_log_is_refused_even_if_validly_signed():
    other = SigningKey.generate("other.example/log")
    note = sign_checkpoint(Checkpoint("evil.example/log", 5, EMPTY_ROOT, HEAD, WHEN), other).note
    with pytest.raises(CheckpointError, match="of the log 'evil.example/log'"):
        open_checkpoint(note, other.verifier())
    assert open_checkpoint(note, other.verifier(), origin="evil.example/log").checkpoint.size == 5


GOOD = checkpoint().text()


@pytest.mark.parametrize("text", [
    GOOD.replace("\n1000\n", "\n01000\n"),
    GOOD.replace("\n1000\n", "\n+1000\n"),
    GOOD.replace("\n1000\n", "\n-1\n"),
    GOOD.replace("\n1000\n", "\n1_000\n"),
    GOOD.replace("\n1000\n", "\n\u0661\n"),  # an Arabic-Indic digit: int() would take it
    GOOD.replace("ERER", "ERE", 1),
    GOOD.replace("RERE=", "RERF="),  # non-canonical base64 padding bits
    GOOD.replace("ERERERERERERERERERERERERERERERERERERERERERE=", "EREREREREREREREREREREQ=="),
    GOOD.replace("chain-head", "chain_head"),
    GOOD.replace(HEAD, HEAD.upper()),
    GOOD.replace(HEAD, HEAD[:-2]),
    GOOD.replace("2026-12-01T10:00:00Z", "2026-12-1T10:00:00Z"),
    GOOD.replace("2026-12-01T10:00:00Z", "2026-12-01 10:00:00"),
    GOOD.replace("time ", "time"),
    GOOD + "extra line\n",
    GOOD.replace(f"chain-head {HEAD}\n", ""),
    GOOD[:-1],
    "has space\n" + GOOD.split("\n", 1)[1],
    "\n" + GOOD.split("\n", 1)[1],
])
def test_malformed_checkpoint_text_is_refused(text):
    with pytest.raises(CheckpointError):
        Checkpoint.from_text(text)


def test_malformed_text_is_refused_even_when_signed():
    from audit.note import sign_note
    note = sign_note(GOOD.replace("\n1000\n", "\n01000\n"), KEY)
    with pytest.raises(CheckpointError, match="leading zeros"):
        open_checkpoint(note, KEY.verifier())


def test_export_and_load_round_trip_sorted_by_size():
    signed = [sign_checkpoint(checkpoint(size), KEY) for size in (30, 10, 20)]
    exported = export_json(signed, KEY.verifier())
    doc = json.loads(exported)
    assert doc["verifier_key"] == KEY.verifier().vkey()
    assert [c["size"] for c in doc["checkpoints"]] == [10, 20, 30]
    loaded = load_checkpoints(exported, KEY.verifier())
    assert [s.checkpoint.size for s in loaded] == [10, 20, 30]
    assert load_checkpoints(signed[0].note.encode(), KEY.verifier()) == [signed[0]]


def test_an_export_whose_fields_disagree_with_its_notes_is_refused():
    doc = json.loads(export_json([sign_checkpoint(checkpoint(), KEY)], KEY.verifier()))
    doc["checkpoints"][0]["size"] = 999
    with pytest.raises(CheckpointError, match="differ from its note"):
        load_checkpoints(json.dumps(doc), KEY.verifier())


def test_an_export_for_another_key_or_of_another_format_is_refused():
    exported = export_json([sign_checkpoint(checkpoint(), KEY)], KEY.verifier())
    with pytest.raises(CheckpointError, match="signed by"):
        load_checkpoints(exported, SigningKey.generate(ORIGIN).verifier())
    for bad in ["{", "[]", '{"format": "x"}', b"\xff{"]:
        with pytest.raises(CheckpointError):
            load_checkpoints(bad, KEY.verifier())
