"""What a coordinator handler returns: records to append, then a response.

Mirrors Kafka's ``CoordinatorResult``: handlers are functions of the current state that mutate
nothing; the runtime appends ``records`` to the log and *replays* them, and only replay changes
state. A handler that needs to react after the append (the group moving to Stable once the
leader's assignment is stored) says so through the records it returns, not by mutating.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from offsetscope.protocol.records import CoordinatorRecord

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class CoordinatorResult(Generic[R]):
    records: Sequence[CoordinatorRecord] = field(default_factory=tuple)
    response: R | None = None
