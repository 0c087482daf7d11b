"""Sealing the reward chain into the event log: ``reward.sealed`` events.

A seal carries the reward chain's head (position and hash) at the moment it is written.
Once it is in the log it is covered by the event chain, the Merkle tree and the next
signed checkpoint, so rewriting any reward at or before that position (even with every
later reward hash recomputed) no longer reaches the sealed head. The checkpoint signer
seals before it signs; rewards after the last seal are protected by their chain alone
until the next one (as events are between two checkpoints).
"""

from __future__ import annotations

from evaluators.chain import SEAL_STREAM, SEAL_TYPE, RewardSealed
from evaluators.rewards import RewardStore
from events.errors import WrongExpectedSeq
from events.model import EventMetadata, RecordedEvent
from events.store import EventStore


class RewardSeals:
    def __init__(self, rewards: RewardStore, store: EventStore) -> None:
        self.rewards, self.store = rewards, store

    def seal(self, actor: str = "system:checkpoints") -> RecordedEvent | None:
        """Append a seal of the current chain head; None when nothing new was sealed.

        Two sealers at once: the stream's expected sequence lets only one of them write.
        """
        position, head_hash = self.rewards.chain_head()
        last, seq = self._last()
        if position <= last:
            return None
        event = RewardSealed(from_position=last, to_position=position, head_hash=head_hash).new_event(
            SEAL_STREAM, EventMetadata(actor=actor), expected_seq=seq)
        try:
            return self.store.append([event])[0].event
        except WrongExpectedSeq:
            return None

    def _last(self) -> tuple[int, int]:
        """(last sealed reward position, the seal stream's head sequence); (0, 0) if none."""
        newest = self.store.closers([SEAL_TYPE], 0, self.store.head(), 1, newest_first=True)
        if not newest:
            return 0, 0
        [event] = self.store.read_stream(SEAL_STREAM, newest[0].stream_seq - 1, 1)
        return int(event.payload["to_position"]), event.stream_seq
