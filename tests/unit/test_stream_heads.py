"""StreamHeads (events/stream_heads.py): entries only ever hold at their mark."""

from __future__ import annotations

from events.stream_heads import StreamHeads

T0, T1, T2 = (0, "0" * 64), (5, "a" * 64), (9, "b" * 64)


def test_nothing_known_reads_everything() -> None:
    heads = StreamHeads()
    assert heads.to_read(["a", "b"]) == ["a", "b"]
    assert heads.known(T0, ["a"]) is None


def test_at_the_mark_known_heads_stand_in_for_reads() -> None:
    heads = StreamHeads()
    heads.committed(T0, T1, {"a": (3, "acme"), "b": (0, None)})
    assert heads.to_read(["a", "b", "c"]) == ["c"]
    assert heads.known(T1, ["a", "c"]) == {"a": (3, "acme")}


def test_a_moved_log_forgets_and_reads_everything_until_it_is_found_unmoved() -> None:
    heads = StreamHeads()
    heads.committed(T0, T1, {"a": (3, None)})
    assert heads.known(T2, ["a"]) is None  # another writer committed T2
    assert heads.to_read(["a"]) == ["a"]
    heads.committed(T2, (12, "c" * 64), {"a": (4, None)})
    assert heads.to_read(["a", "b"]) == ["a", "b"]  # still wary
    assert heads.known((12, "c" * 64), ["a"]) == {"a": (4, None)}  # unmoved: trusted again
    assert heads.to_read(["a", "b"]) == ["b"]


def test_a_commit_that_did_not_start_at_the_mark_replaces_the_entries() -> None:
    heads = StreamHeads()
    heads.committed(T0, T1, {"a": (3, None), "b": (1, None)})
    heads.committed(T0, T2, {"a": (7, None)})  # a late report of an older transaction
    assert heads.known(T2, ["a", "b"]) == {"a": (7, None)}


def test_a_commit_from_the_mark_adds_to_the_entries() -> None:
    heads = StreamHeads()
    heads.committed(T0, T1, {"a": (3, None), "b": (1, None)})
    heads.committed(T1, T2, {"a": (4, None)})
    assert heads.known(T2, ["a", "b"]) == {"a": (4, None), "b": (1, None)}


def test_forget_and_the_size_limit() -> None:
    heads = StreamHeads(limit=2)
    heads.committed(T0, T1, {"a": (1, None), "b": (1, None)})
    heads.committed(T1, T2, {"c": (1, None)})  # over the limit: starts afresh
    assert heads.known(T2, ["a", "b", "c"]) == {"c": (1, None)}
    heads.forget()
    assert heads.known(T2, ["c"]) is None
