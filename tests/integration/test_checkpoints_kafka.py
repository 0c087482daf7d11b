"""Checkpoints reach Kafka through the outbox (`<prefix>.checkpoints`), and the active
relay keeps the Merkle tree at the log's head."""

from __future__ import annotations

import json
import signal

import pytest

from audit.builder import TreeBuilder
from audit.checkpoint_store import CheckpointStore
from audit.checkpoints import open_checkpoint
from audit.signer import CheckpointSigner
from audit.sql_nodestore import SqlNodeStore
from events.sql_store import SqlEventStore
from kernel.db import make_engine
from tests.integration.audit_world import KEY
from tests.integration.conftest import append_many, read_topic
from tests.integration.test_relay_kafka import relay_process, wait_for


@pytest.mark.kafka
def test_signed_checkpoints_are_published_verbatim(postgres_url: str, kafka_bootstrap: str,
                                                   topic_prefix: str) -> None:
    engine = make_engine(postgres_url)
    store = SqlEventStore(engine)
    signer = CheckpointSigner(engine, store, TreeBuilder(engine, store), CheckpointStore(engine), KEY)
    append_many(store, streams=2, per_stream=4)
    signer.sign()
    append_many(store, streams=1, per_stream=3)
    signer.sign()

    relay = relay_process(postgres_url, kafka_bootstrap, topic_prefix, "--once")
    output, _ = relay.communicate(timeout=90)
    assert relay.returncode == 0, output
    assert f"published 2 to {topic_prefix}.checkpoints, at position 2" in output

    records = read_topic(kafka_bootstrap, f"{topic_prefix}.checkpoints", expect=2)
    values = [json.loads(r.value) for r in records]
    assert [v["tree_size"] for v in values] == [8, 11]
    assert {r.key for r in records} == {KEY.name.encode()}
    for value in values:
        opened = open_checkpoint(value["note"], KEY.verifier()).checkpoint
        assert (opened.size, opened.chain_head) == (value["tree_size"], value["chain_head"])
    engine.dispose()


@pytest.mark.kafka
def test_the_running_relay_builds_the_tree_as_the_log_grows(postgres_url: str, kafka_bootstrap: str,
                                                            topic_prefix: str) -> None:
    engine = make_engine(postgres_url)
    store = SqlEventStore(engine)
    append_many(store, streams=2, per_stream=5)
    relay = relay_process(postgres_url, kafka_bootstrap, topic_prefix)
    try:
        wait_for(lambda: SqlNodeStore(engine).tree_size() == 10, timeout=60)
        append_many(store, streams=1, per_stream=7)
        wait_for(lambda: SqlNodeStore(engine).tree_size() == 17, timeout=60)
    finally:
        relay.send_signal(signal.SIGTERM)
        output, _ = relay.communicate(timeout=60)
    assert relay.returncode == 0, output
    engine.dispose()
