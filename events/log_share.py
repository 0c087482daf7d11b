"""A share of the event log: the streams one of N followers of the database log reads.

Kafka splits a topic into partitions and a consumer group hands them out; the database
log has no partitions, so N processes that follow it together (``hcp evaluator
--processes N``) each read a share of its streams instead: share K of N holds the streams
whose hash is K modulo N, so a stream's events, and therefore every subject cut from it,
are read by one process only. Contract streams are in every share: each process must see
a publication to refresh its versions and start (or find) the re-evaluation job.

The hash is the first 28 bits of the stream id's MD5, which PostgreSQL computes in the
query (so a process reads only its share) and Python computes the same way (the other
stores filter after reading). It is fixed forever: a share that moved streams between
processes while their checkpoints stay could skip events.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

CONTRACT_STREAMS = "contract:"  # contract.versions.contract_stream("") (events cannot import contract)


@dataclass(frozen=True)
class LogShare:
    index: int  # K, from 0
    count: int  # N

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"share {self.index} of {self.count}: need 0 <= K < N")

    @classmethod
    def parse(cls, text: str) -> LogShare:
        """``K/N``, K counted from 0 (``0/2`` and ``1/2`` are the two halves)."""
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if match is None:
            raise ValueError(f"share {text!r}: expected K/N, e.g. 0/2")
        return cls(int(match[1]), int(match[2]))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, stream_id: str) -> bool:
        """Whether this share reads ``stream_id`` (what the SQL predicate selects)."""
        if self.count == 1 or stream_id.startswith(CONTRACT_STREAMS):
            return True
        return stream_hash(stream_id) % self.count == self.index


def stream_hash(stream_id: str) -> int:
    """The first 28 bits of the MD5 of the stream id, as PostgreSQL's
    ``('x' || substr(md5(stream_id), 1, 7))::bit(28)::int`` gives them."""
    return int(hashlib.md5(stream_id.encode(), usedforsecurity=False).hexdigest()[:7], 16)


# The same predicate in SQL, on the events table's ``stream_id`` (bound: :share_count,
# :share_index, :contract_streams).
SHARE_SQL = ("(events.stream_id LIKE :contract_streams OR "
             "('x' || substr(md5(events.stream_id), 1, 7))::bit(28)::int % :share_count = :share_index)")


def share_parameters(share: LogShare) -> dict[str, object]:
    return {"share_count": share.count, "share_index": share.index,
            "contract_streams": CONTRACT_STREAMS + "%"}
