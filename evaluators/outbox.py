"""Reward records as an outbox feed: `hcp relay` publishes them to ``<prefix>.rewards``.

The reward table is its own outbox (a row is its intent to publish, committed together),
tailed by its gapless position like the event log. Key = the subject's stream id, so a
stream's rewards stay in order on one partition; value = the record's JSON wire form.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine, RowMapping

from evaluators.rewards import from_row
from evaluators.tables import reward_records
from events.kafka_io import encode_json
from events.relay import OutboxMessage, TableFeed
from events.relay_wake import REWARDS


def reward_message(row: RowMapping) -> OutboxMessage:
    record = from_row(row)
    headers = (("contract", f"{record.contract_name}@{record.contract_version}".encode()),)
    return OutboxMessage(row["position"], record.stream_id.encode(), encode_json(record.to_json()),
                         headers)


def rewards_table_feed(engine: Engine, topic: str) -> TableFeed:
    return TableFeed(engine, reward_records, "position", topic, reward_message, wake=REWARDS)

