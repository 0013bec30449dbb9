"""Producer ids: the controller hands out blocks of 1000, a broker uses its block in order.

Mirrors KRaft's ``ProducerIdControlManager`` (controller side: the first block of a cluster starts
at 0, each next block starts where the last ended, recorded as ``ProducerIdsRecord`` in the
metadata log) and ``RPCProducerIdManager`` (broker side: ``AllocateProducerIds`` when its block
runs out). A single-broker cluster therefore hands out 0, 1, 2, ... in request order.

The allocation lives outside ``__transaction_state``: an id is used up even if the request that
took it fails later, exactly as in Kafka.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProducerIdsBlock:
    """``ProducerIdsBlock``: ids ``first_producer_id .. first_producer_id + size - 1``."""

    assigned_broker_id: int
    first_producer_id: int
    size: int

    @property
    def last_producer_id(self) -> int:
        return self.first_producer_id + self.size - 1

    @property
    def next_block_first_id(self) -> int:
        return self.first_producer_id + self.size


class ProducerIdControl:
    """The controller's allocator of producer-id blocks (shared by all brokers)."""

    __slots__ = ("_block_size", "_next_first_id", "blocks")

    def __init__(self, block_size: int = 1000, next_producer_id: int = 0) -> None:
        if block_size <= 0:
            raise ValueError(f"block size must be positive, not {block_size}")
        self._block_size = block_size
        self._next_first_id = next_producer_id
        self.blocks: list[ProducerIdsBlock] = []

    def allocate(self, broker_id: int) -> ProducerIdsBlock:
        """Hand the next block to ``broker_id``."""
        block = ProducerIdsBlock(broker_id, self._next_first_id, self._block_size)
        self._next_first_id = block.next_block_first_id
        self.blocks.append(block)
        return block


class ProducerIdManager:
    """A broker's producer-id generator (``ProducerIdManager.generateProducerId``)."""

    __slots__ = ("_block", "_broker_id", "_control", "_next")

    def __init__(self, control: ProducerIdControl | None = None, broker_id: int = 0) -> None:
        self._control = control or ProducerIdControl()
        self._broker_id = broker_id
        self._block: ProducerIdsBlock | None = None
        self._next = 0

    def generate_producer_id(self) -> int:
        """The next unused producer id, fetching a new block when the current one is used up."""
        if self._block is None or self._next > self._block.last_producer_id:
            self._block = self._control.allocate(self._broker_id)
            self._next = self._block.first_producer_id
        producer_id = self._next
        self._next += 1
        return producer_id

    @property
    def current_block(self) -> ProducerIdsBlock | None:
        return self._block
