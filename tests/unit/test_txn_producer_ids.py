"""Producer ids come in controller blocks of 1000, used in order."""

from __future__ import annotations

from offsetscope.sim.coordinator.txn.producer_ids import (
    ProducerIdControl,
    ProducerIdManager,
    ProducerIdsBlock,
)


def test_single_broker_hands_out_ids_from_zero_across_blocks() -> None:
    control = ProducerIdControl()
    manager = ProducerIdManager(control, broker_id=1)
    ids = [manager.generate_producer_id() for _ in range(1001)]
    assert ids == list(range(1001))
    assert control.blocks == [ProducerIdsBlock(1, 0, 1000), ProducerIdsBlock(1, 1000, 1000)]
    assert manager.current_block == ProducerIdsBlock(1, 1000, 1000)


def test_brokers_get_disjoint_blocks_in_request_order() -> None:
    control = ProducerIdControl(block_size=10)
    a = ProducerIdManager(control, broker_id=1)
    b = ProducerIdManager(control, broker_id=2)
    assert [a.generate_producer_id(), b.generate_producer_id(), a.generate_producer_id()] == [
        0,
        10,
        1,
    ]
    assert [blk.last_producer_id for blk in control.blocks] == [9, 19]
