"""The bundled classic group coordinator and offset store (Kafka 4.4's classic group protocol).

Its states are :class:`offsetscope.protocol.states.ClassicGroupState`, shared with the history folds.

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

__all__ = [
    "ApiError",
    "ClassicGroup",
    "ClassicGroupMember",
    "Errors",
    "GroupCoordinatorConfig",
    "GroupCoordinatorShard",
    "GroupResult",
    "OffsetAndMetadata",
    "OffsetStore",
]
