"""The bundled classic group coordinator and offset store (Kafka 4.4's classic group protocol).

* :mod:`.states` -- :class:`ClassicGroupState` and its table of valid previous states;
* :mod:`.group` -- a classic group and its members, changed only by :meth:`ClassicGroup.apply`;
* :mod:`.coordinator` -- the handlers of one offsets partition (:class:`GroupCoordinatorShard`);
* :mod:`.offsets` -- committed and pending transactional offsets (:class:`OffsetStore`);
* :mod:`.records` -- the only builders of ``__consumer_offsets`` records;
* :mod:`.changes` / :mod:`.events` -- in-memory changes and ground-truth events;
* :mod:`.messages` -- requests and responses; :mod:`.errors` -- Kafka error codes;
* :mod:`offsetscope.sim.coordinator.runtime` -- routing, appends, replay, timers.
"""

from __future__ import annotations

from offsetscope.sim.coordinator.errors import ApiError, Errors
from offsetscope.sim.coordinator.group.config import GroupCoordinatorConfig
from offsetscope.sim.coordinator.group.coordinator import GroupCoordinatorShard, GroupResult
from offsetscope.sim.coordinator.group.group import ClassicGroup, ClassicGroupMember
from offsetscope.sim.coordinator.group.offsets import OffsetAndMetadata, OffsetStore
from offsetscope.sim.coordinator.group.states import (
    VALID_PREVIOUS_STATES,
    ClassicGroupState,
    IllegalStateTransition,
)

__all__ = [
    "VALID_PREVIOUS_STATES",
    "ApiError",
    "ClassicGroup",
    "ClassicGroupMember",
    "ClassicGroupState",
    "Errors",
    "GroupCoordinatorConfig",
    "GroupCoordinatorShard",
    "GroupResult",
    "IllegalStateTransition",
    "OffsetAndMetadata",
    "OffsetStore",
]
