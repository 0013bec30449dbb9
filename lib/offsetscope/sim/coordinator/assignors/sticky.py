"""``sticky`` and ``cooperative-sticky``: Kafka's ``StickyAssignor`` and
``CooperativeStickyAssignor`` (``AbstractStickyAssignor``), rack-aware as in KIP-881.

Both balance partitions over members while keeping as many partitions where they were as balance
allows. They differ in where the past comes from and in the rebalance protocol:

* ``sticky`` (eager) reads each member's previous assignment and generation from its userData
  (StickyAssignorUserData, see ``userdata``); eager members own nothing when they join.
* ``cooperative-sticky`` reads ``ownedPartitions`` and ``generationId`` from the subscription
  (v2+; older members put the generation in userData) and then removes from the result every
  partition that changes owner: the old owner revokes it, and it is assigned in the follow-up
  rebalance.

Previous ownership (``allSubscriptionsEqual``): a partition claimed by two members counts for the
one with the higher generation; two claims in the *same* generation invalidate it for both (it
is then treated as newly assigned). Claims on topics without metadata are dropped.

Two algorithms, chosen by whether every member subscribes to the same topics:

* Constrained (all equal): quotas ``min = total // members``, ``max = ceil(total / members)``
  with ``total % members`` members at ``max``. Members are walked in the iteration order of the
  leader's ``HashMap``: each keeps its owned partitions (sorted by partition, then topic) up to
  ``min``, or ``max`` while members at ``max`` are still needed; the rest is revoked. Then the
  unassigned partitions (sorted by topic and partition, stably re-sorted by how many members
  share their racks when members have racks) are dealt round-robin -- rack-local first when
  rack-aware -- to members under ``min`` (sorted by member id), then to members at ``min``.
* General: keep every owned partition whose topic the member still subscribes to (and whose
  racks match), assign the rest one by one to the member with the fewest partitions among those
  subscribed (ties by member id), then move partitions from members with more than one partition
  above another candidate, preferring to move a partition back to its owner from an older
  generation and undoing a move rather than moving another partition between the same pair;
  when this does not improve the sum of pairwise count differences, it is rolled back.

The Java code iterates ``HashMap``/``HashSet`` instances in several places where the order
decides the result; those are reproduced with ``java.JavaHashMap``/``JavaHashSet``. The Java
assignor also remembers the highest generation it has seen across ``assign`` calls on the same
object (``maxGeneration`` is never reset); so does ours, per instance.
"""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence

from offsetscope.sim.coordinator.assignors.common import (
    member_order,
    partitions_per_topic,
    topic_partition_key,
    usable_rack,
    use_rack_aware_assignment,
)
from offsetscope.sim.coordinator.assignors.model import (
    DEFAULT_GENERATION,
    Assignment,
    AssignmentError,
    ClusterMetadata,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
)
from offsetscope.sim.coordinator.assignors.userdata import (
    MemberData,
    cooperative_member_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    sticky_member_data,
)
from offsetscope.sim.coordinator.java import (
    JavaHashMap,
    JavaHashSet,
    java_sort_key,
    java_string_hash,
    topic_partition_hash,
)


class _RackInfo:
    """``AbstractStickyAssignor.RackInfo``: member racks and replica racks, when rack-aware."""

    __slots__ = ("consumer_racks", "num_consumers_by_partition", "partition_racks")

    def __init__(
        self,
        cluster: ClusterMetadata,
        topics: JavaHashMap[str, int],
        subscriptions: Mapping[str, Subscription],
        members: Sequence[str],
    ) -> None:
        consumers_by_rack: dict[str, list[str]] = {}
        for member in members:
            rack = usable_rack(subscriptions[member].rack_id)
            if rack is not None:
                consumers_by_rack.setdefault(rack, []).append(member)
        partition_racks: dict[TopicPartition, frozenset[str]] = {}
        all_partition_racks: set[str] = set()
        if consumers_by_rack:
            for topic, count in topics.items():
                for p in range(count):
                    racks = frozenset(r for r in cluster.partition_racks(topic, p) if r is not None)
                    partition_racks[TopicPartition(topic, p)] = racks
                    all_partition_racks |= racks
        self.consumer_racks: dict[str, str] = {}
        self.partition_racks: dict[TopicPartition, frozenset[str]] = {}
        if use_rack_aware_assignment(
            consumers_by_rack, all_partition_racks, partition_racks.values()
        ):
            self.consumer_racks = {c: r for r, cs in consumers_by_rack.items() for c in cs}
            self.partition_racks = partition_racks
        # computed from every member rack even when the assignment is not rack-aware (as Java)
        self.num_consumers_by_partition = {
            tp: sum(len(consumers_by_rack.get(r, ())) for r in racks)
            for tp, racks in partition_racks.items()
        }

    def racks_mismatch(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.consumer_racks.get(consumer)
        if rack is None:
            return False
        replica_racks = self.partition_racks.get(tp)
        return replica_racks is None or rack not in replica_racks

    def sort_by_rack_consumers(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        if not self.num_consumers_by_partition:
            return partitions
        counts = self.num_consumers_by_partition
        return sorted(partitions, key=lambda tp: counts.get(tp, 0))

    def next_rack_consumer(self, tp: TopicPartition, consumers: list[str], first: int) -> int:
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        n = len(consumers)
        for i in range(n):
            index = (first + i) % n
            rack = self.consumer_racks.get(consumers[index])
            if rack is not None and rack in racks:
                return index
        return -1


def _all_topic_partitions(
    topics: JavaHashMap[str, int], ordered: list[str]
) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t in ordered for p in range(topics[t])]


class _Constrained:
    """``ConstrainedAssignmentBuilder``: every member subscribes to the same topics."""

    def __init__(
        self,
        topics: JavaHashMap[str, int],
        rack_info: _RackInfo,
        owned: JavaHashMap[str, list[TopicPartition]],
        multiply_claimed: JavaHashSet[TopicPartition],
        transferring: dict[TopicPartition, str],
    ) -> None:
        self.topics = topics
        self.rack_info = rack_info
        self.owned = owned
        self.multiply_claimed = multiply_claimed
        self.transferring = transferring
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.under_min: list[str] = []
        self.at_min: list[str] = []
        total = sum(topics.values())
        n = len(owned)
        if n == 0:
            raise AssignmentError("/ by zero", "ArithmeticException")
        self.min_quota = total // n
        self.max_quota = -(-total // n)
        self.expected_over_min = total % n
        self.current_over_min = 0
        self.assignment: dict[str, list[TopicPartition]] = {c: [] for c in owned}
        self.assigned: list[TopicPartition] = []

    def build(self) -> dict[str, list[TopicPartition]]:
        self._assign_owned()
        unassigned = self._unassigned()
        self.under_min.sort(key=java_sort_key)
        self.at_min.sort(key=java_sort_key)
        unassigned = self.rack_info.sort_by_rack_consumers(unassigned)
        self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled()
        return self.assignment

    def _assign_owned(self) -> None:
        for consumer, claimed in self.owned.items():
            kept: list[TopicPartition] = []
            for tp in claimed:
                if self.rack_info.racks_mismatch(consumer, tp):
                    self.maybe_revoked[tp] = consumer
                else:
                    kept.append(tp)
            kept.sort(key=lambda tp: (tp.partition, java_sort_key(tp.topic)))
            for tp in self.multiply_claimed:
                if tp in kept:
                    kept.remove(tp)
            mine = self.assignment[consumer]
            if len(kept) < self.min_quota:
                mine.extend(kept)
                self.assigned.extend(kept)
                self.under_min.append(consumer)
            elif len(kept) >= self.max_quota and self.current_over_min < self.expected_over_min:
                self.current_over_min += 1
                if self.current_over_min == self.expected_over_min:
                    self.at_min.clear()
                mine.extend(kept[: self.max_quota])
                self.assigned.extend(kept[: self.max_quota])
                for tp in kept[self.max_quota :]:
                    self.maybe_revoked[tp] = consumer
            else:
                mine.extend(kept[: self.min_quota])
                self.assigned.extend(kept[: self.min_quota])
                for tp in kept[self.min_quota :]:
                    self.maybe_revoked[tp] = consumer
                if self.current_over_min < self.expected_over_min:
                    self.at_min.append(consumer)

    def _unassigned(self) -> list[TopicPartition]:
        """All partitions minus the kept ones, by a two-pointer walk over sorted lists.

        The walk is Kafka's: it assumes every kept partition exists and appears once; when that
        does not hold it behaves as Kafka's does.
        """
        sorted_topics = sorted(self.topics, key=java_sort_key)
        if not self.assigned:
            return _all_topic_partitions(self.topics, sorted_topics)
        assigned = sorted(self.assigned, key=topic_partition_key)
        out: list[TopicPartition] = []
        index = 0
        add_directly = False
        nxt = assigned[0]
        for topic in sorted_topics:
            for p in range(self.topics[topic]):
                if add_directly or not (nxt.topic == topic and nxt.partition == p):
                    out.append(TopicPartition(topic, p))
                elif index + 1 < len(assigned):
                    index += 1
                    nxt = assigned[index]
                else:
                    add_directly = True
        return out

    def _assign_new(self, tp: TopicPartition, consumer: str) -> int:
        mine = self.assignment[consumer]
        mine.append(tp)
        previous = self.maybe_revoked.get(tp)
        if (previous is not None and previous != consumer) or tp in self.multiply_claimed:
            self.transferring[tp] = consumer
        return len(mine)

    def _assign_rack_aware_round_robin(self, unassigned: list[TopicPartition]) -> None:
        if not self.rack_info.consumer_racks:
            return
        next_index = 0
        remaining: list[TopicPartition] = []
        for tp in unassigned:
            consumer: str | None = None
            index = self.rack_info.next_rack_consumer(tp, self.under_min, next_index)
            if index >= 0:
                consumer = self.under_min[index]
                count = len(self.assignment[consumer]) + 1
                if count >= self.min_quota:
                    self.under_min.remove(consumer)
                    if count < self.max_quota and self.current_over_min < self.expected_over_min:
                        self.at_min.append(consumer)
                else:
                    index += 1
                next_index = index % len(self.under_min) if self.under_min else 0
            elif self.at_min:
                first = self.rack_info.next_rack_consumer(tp, self.at_min, 0)
                if first >= 0:
                    consumer = self.at_min[first]
                    if len(self.assignment[consumer]) + 1 == self.max_quota:
                        del self.at_min[first]
                        self.current_over_min += 1
                        if self.current_over_min == self.expected_over_min:
                            self.at_min.clear()
            if consumer is None:
                remaining.append(tp)
            else:
                self._assign_new(tp, consumer)
        unassigned[:] = remaining

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        # a Java ListIterator over under_min: position, and the last element it returned
        cursor = 0
        last: int | None = None
        for tp in unassigned:
            if cursor < len(self.under_min):
                consumer = self.under_min[cursor]
                last, cursor = cursor, cursor + 1
            elif not self.under_min and not self.at_min:
                raise AssignmentError("No more unfilled consumers to be assigned.")
            elif not self.under_min:
                consumer = self.at_min.pop(0)
            else:
                cursor, last = 1, 0
                consumer = self.under_min[0]
            count = self._assign_new(tp, consumer)
            if count == self.min_quota:
                if last is None:
                    raise AssignmentError("iterator remove() without next()")
                del self.under_min[last]
                cursor, last = last, None
                self.at_min.append(consumer)
            elif count == self.max_quota:
                self.current_over_min += 1

    def _verify_unfilled(self) -> None:
        if not self.under_min:
            return
        if self.current_over_min != self.expected_over_min:
            raise AssignmentError(
                "We haven't reached the expected number of members with more than the minQuota "
                "partitions, but no more partitions to be assigned"
            )
        for member in self.under_min:
            if len(self.assignment[member]) != self.min_quota:
                raise AssignmentError(
                    f"Consumer: [{member}] doesn't reach minQuota partitions, and no more "
                    "partitions to be assigned"
                )


class _SortedMembers:
    """``TreeSet<String>`` ordered by (current assignment size, member id).

    As in Java the order key is read at insertion; callers remove a member before changing its
    assignment and add it back afterwards.
    """

    __slots__ = ("_keys", "_sizes")

    def __init__(self) -> None:
        self._keys: list[tuple[int, str, str]] = []
        self._sizes: Mapping[str, list[TopicPartition]] = {}

    def bind(self, assignment: Mapping[str, list[TopicPartition]]) -> None:
        self._sizes = assignment

    def _key(self, member: str) -> tuple[int, str, str]:
        return (len(self._sizes[member]), java_sort_key(member), member)

    def add(self, member: str) -> None:
        key = self._key(member)
        i = bisect.bisect_left(self._keys, key)
        if i == len(self._keys) or self._keys[i] != key:
            self._keys.insert(i, key)

    def remove(self, member: str) -> None:
        key = self._key(member)
        i = bisect.bisect_left(self._keys, key)
        if i < len(self._keys) and self._keys[i] == key:
            del self._keys[i]

    def first(self) -> str:
        if not self._keys:
            raise AssignmentError("TreeSet.first() on an empty set", "NoSuchElementException")
        return self._keys[0][2]

    def last(self) -> str:
        if not self._keys:
            raise AssignmentError("TreeSet.last() on an empty set", "NoSuchElementException")
        return self._keys[-1][2]

    def __iter__(self) -> Iterator[str]:
        return iter([k[2] for k in self._keys])


class _PartitionMovements:
    """``AbstractStickyAssignor.PartitionMovements``: who moved what during one balance.

    A movement set is a ``HashSet<TopicPartition>`` whose first element (Java iteration order)
    is the partition moved back when the reverse movement is asked for.
    """

    __slots__ = ("_by_topic", "_moves")

    def __init__(self) -> None:
        self._by_topic: dict[str, dict[tuple[str, str], JavaHashSet[TopicPartition]]] = {}
        self._moves: dict[TopicPartition, tuple[str, str]] = {}

    def _remove_record(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self._moves.pop(tp)
        per_topic = self._by_topic[tp.topic]
        per_topic[pair].remove(tp)
        if not per_topic[pair]:
            del per_topic[pair]
        if not per_topic:
            del self._by_topic[tp.topic]
        return pair

    def _add_record(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self._moves[tp] = pair
        per_topic = self._by_topic.setdefault(tp.topic, {})
        per_topic.setdefault(pair, JavaHashSet(topic_partition_hash)).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self._moves:
            src, _ = self._remove_record(tp)
            # a partition moving back to where it started leaves no record
            if src != new:
                self._add_record(tp, (src, new))
        else:
            self._add_record(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str | None, new: str) -> TopicPartition:
        """Undo an earlier opposite move of the same topic instead of creating a new one."""
        per_topic = self._by_topic.get(tp.topic)
        if per_topic is None:
            return tp
        if tp in self._moves:
            old = self._moves[tp][0]
        # a null old owner (Java would pass null) matches no recorded pair
        reverse = None if old is None else per_topic.get((new, old))
        return tp if reverse is None else reverse.first()


def _null_pointer(what: str) -> AssignmentError:
    return AssignmentError(f"{what} is null", "NullPointerException")


class _General:
    """``GeneralAssignmentBuilder``: members subscribe to different topics."""

    def __init__(
        self,
        topics: JavaHashMap[str, int],
        rack_info: _RackInfo,
        current: JavaHashMap[str, list[TopicPartition]],
        subscriptions: Mapping[str, Subscription],
        members: Sequence[str],
        member_data: dict[str, MemberData],
        max_generation: int,
    ) -> None:
        self.topics = topics
        self.rack_info = rack_info
        self.subscriptions = subscriptions
        self.members = members
        self.member_data = member_data
        self.max_generation = max_generation
        self.total = sum(topics.values())
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in topics}
        self.consumer_topics: dict[str, list[str]] = {}
        for member in members:
            mine: list[str] = []
            self.consumer_topics[member] = mine
            for topic in subscriptions[member].topics:
                if topic in topics:
                    mine.append(topic)
                    self.topic_consumers[topic].append(member)
        # every member already has an entry (Java adds missing ones here; there are none)
        # Java keeps the member -> partitions HashMap; only lookups remain, so a dict will do
        self.current: dict[str, list[TopicPartition]] = dict(current.items())
        self.owner: dict[TopicPartition, str] = {
            tp: member for member, tps in self.current.items() for tp in tps
        }
        ordered_topics = sorted(
            self.topic_consumers,
            key=lambda t: (len(self.topic_consumers[t]), java_sort_key(t)),
        )
        self.sorted_all = _all_topic_partitions(topics, ordered_topics)
        self.partitions_of = {
            t: [TopicPartition(t, p) for p in range(n)] for t, n in topics.items()
        }
        self.sorted_members = _SortedMembers()
        self.sorted_members.bind(self.current)
        self.revocation_required = False
        self.movements = _PartitionMovements()

    def build(self) -> dict[str, list[TopicPartition]]:
        previous = self._previous_owners()
        unassigned = self._unassigned(self._assign_owned())
        for member in self.current:
            self.sorted_members.add(member)
        self._balance(previous, unassigned)
        return self.current

    def _previous_owners(self) -> dict[TopicPartition, tuple[str, int]]:
        """Owners from older generations: where a partition may move back to."""
        previous: dict[TopicPartition, tuple[str, int]] = {}

        def update(partitions: Sequence[TopicPartition], member: str, generation: int) -> None:
            for tp in partitions:
                known = previous.get(tp)
                if known is None or generation > known[1]:
                    previous[tp] = (member, generation)

        for member in self.members:
            data = self.member_data[member]
            if data.generation is not None and data.generation < self.max_generation:
                update(data.partitions, member, data.generation)
            elif data.generation is None and self.max_generation > DEFAULT_GENERATION:
                update(data.partitions, member, DEFAULT_GENERATION)
        return previous

    def _assign_owned(self) -> list[TopicPartition]:
        assigned: list[TopicPartition] = []
        for member, partitions in self.current.items():
            subscribed = self.subscriptions[member].topics
            kept: list[TopicPartition] = []
            # claims on topics without metadata were already dropped with the other claims
            for tp in partitions:
                if tp.topic not in subscribed or self.rack_info.racks_mismatch(member, tp):
                    # Java leaves the stale owner entry in place here; so do we
                    self.revocation_required = True
                else:
                    kept.append(tp)
                    assigned.append(tp)
            partitions[:] = kept
        return assigned

    def _unassigned(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        if not assigned:
            # the same list object, as in Java: later removals apply to both
            return self.sorted_all
        tc = self.topic_consumers
        assigned.sort(key=lambda tp: (len(tc[tp.topic]), java_sort_key(tp.topic), tp.partition))
        out: list[TopicPartition] = []
        index = 0
        add_directly = False
        nxt = assigned[0]
        for tp in self.sorted_all:
            if add_directly or nxt != tp:
                out.append(tp)
            elif index + 1 < len(assigned):
                index += 1
                nxt = assigned[index]
            else:
                add_directly = True
        return out

    def _size(self, member: str | None) -> int:
        if member is None:
            raise _null_pointer("member")
        partitions = self.current.get(member)
        if partitions is None:
            raise _null_pointer(f"assignment of {member}")
        return len(partitions)

    def _max_assignment_size(self, topics: list[str]) -> int:
        if len(topics) == len(self.topics):
            return self.total
        return sum(self.topics[t] for t in topics)

    def _is_balanced(self) -> bool:
        smallest = self._size(self.sorted_members.first())
        largest = self._size(self.sorted_members.last())
        if smallest >= largest - 1:
            return True
        # rebuilt from the lists, not taken from ``self.owner``: after a move based on a stale
        # owner entry the two disagree, and Kafka reads the lists here (last list wins)
        owner_now = {tp: member for member, tps in self.current.items() for tp in tps}
        for member in self.sorted_members:
            count = self._size(member)
            topics = self.consumer_topics[member]
            if count == self._max_assignment_size(topics):
                continue
            mine = set(self.current[member])
            for topic in topics:
                for tp in self.partitions_of[topic]:
                    if tp not in mine and count + 1 < self._size(owner_now.get(tp)):
                        return False
        return True

    @staticmethod
    def _balance_score(assignment: Mapping[str, list[TopicPartition]]) -> int:
        sizes = [len(p) for p in assignment.values()]
        return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1 :])

    def _maybe_assign_partition(self, tp: TopicPartition, rack_info: _RackInfo | None) -> bool:
        for member in self.sorted_members:
            if tp.topic in self.consumer_topics[member] and (
                rack_info is None or not rack_info.racks_mismatch(member, tp)
            ):
                self.sorted_members.remove(member)
                self.current[member].append(tp)
                self.owner[tp] = member
                self.sorted_members.add(member)
                return True
        return False

    def _maybe_assign(
        self, partitions: list[TopicPartition], rack_info: _RackInfo | None, remove: bool
    ) -> None:
        left: list[TopicPartition] = []
        for tp in partitions:
            # a topic nobody can take is skipped; an assigned partition leaves only if asked
            skipped = not self.topic_consumers[tp.topic]
            if skipped or not (self._maybe_assign_partition(tp, rack_info) and remove):
                left.append(tp)
        if remove:
            partitions[:] = left

    def _can_participate(self, member: str) -> bool:
        partitions = self.current[member]
        if len(partitions) < self._max_assignment_size(self.consumer_topics[member]):
            return True
        return any(len(self.topic_consumers[tp.topic]) >= 2 for tp in partitions)

    def _balance(
        self, previous: dict[TopicPartition, tuple[str, int]], unassigned: list[TopicPartition]
    ) -> None:
        initializing = not self.current[self.sorted_members.last()]
        to_assign = unassigned
        if self.rack_info.consumer_racks:
            to_assign = list(unassigned)
            self._maybe_assign(to_assign, self.rack_info, remove=True)
        self._maybe_assign(to_assign, None, remove=False)

        fixed_topics = {t for t, cs in self.topic_consumers.items() if len(cs) < 2}
        self.sorted_all[:] = [tp for tp in self.sorted_all if tp.topic not in fixed_topics]
        unassigned[:] = [tp for tp in unassigned if tp.topic not in fixed_topics]

        fixed: dict[str, list[TopicPartition]] = {}
        for member in self.consumer_topics:
            if not self._can_participate(member):
                self.sorted_members.remove(member)
                fixed[member] = self.current.pop(member)

        before = {m: list(p) for m, p in self.current.items()}
        owner_before = dict(self.owner)
        if not self.revocation_required:
            self._perform_reassignments(unassigned, previous)
        moved = self._perform_reassignments(self.sorted_all, previous)
        # keep the moves only if they made the assignment more balanced
        if (
            not initializing
            and moved
            and self._balance_score(self.current) >= self._balance_score(before)
        ):
            self.current.clear()
            self.current.update(before)
            self.owner = owner_before
        for member, partitions in fixed.items():
            self.current[member] = partitions
            self.sorted_members.add(member)

    def _perform_reassignments(
        self, partitions: list[TopicPartition], previous: dict[TopicPartition, tuple[str, int]]
    ) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                member = self.owner.get(tp)
                earlier = previous.get(tp)
                if earlier is not None and self._size(member) > self._size(earlier[0]) + 1:
                    self._reassign_to(tp, earlier[0])
                    performed = modified = True
                    continue
                if self._move_to_less_loaded(tp, member):
                    performed = modified = True
        return performed

    def _move_to_less_loaded(self, tp: TopicPartition, member: str | None) -> bool:
        size = self._size(member)
        member_rack = self.rack_info.consumer_racks.get(member) if member is not None else None
        racks = self.rack_info.partition_racks.get(tp, frozenset())
        if member_rack is not None and racks and member_rack in racks:
            for other in self.topic_consumers[tp.topic]:
                other_rack = self.rack_info.consumer_racks.get(other)
                if other_rack is None or other_rack not in racks:
                    continue
                if size > self._size(other) + 1:
                    self._reassign(tp)
                    return True
        for other in self.topic_consumers[tp.topic]:
            if size > self._size(other) + 1:
                self._reassign(tp)
                return True
        return False

    def _reassign(self, tp: TopicPartition) -> None:
        target = next(m for m in self.sorted_members if tp.topic in self.consumer_topics[m])
        self._reassign_to(tp, target)

    def _reassign_to(self, tp: TopicPartition, target: str) -> None:
        moving = self.movements.partition_to_move(tp, self.owner.get(tp), target)
        old = self.owner.get(moving)
        if old is None:
            raise _null_pointer(f"owner of {moving}")
        self.sorted_members.remove(old)
        self.sorted_members.remove(target)
        self.movements.move(moving, old, target)
        old_partitions = self.current.get(old)
        new_partitions = self.current.get(target)
        if old_partitions is None or new_partitions is None:
            raise _null_pointer(f"assignment of {old if old_partitions is None else target}")
        if moving in old_partitions:
            old_partitions.remove(moving)
        new_partitions.append(moving)
        self.owner[moving] = target
        self.sorted_members.add(target)
        self.sorted_members.add(old)


class _StickyBase(ABC):
    """``AbstractStickyAssignor``: shared by ``sticky`` and ``cooperative-sticky``."""

    name: str
    version = 0

    def __init__(self) -> None:
        # Java's maxGeneration field: the highest generation seen by this object, never reset
        self.max_generation = DEFAULT_GENERATION
        # Java's partitionsTransferringOwnership: set by the constrained path, None after the
        # general one (the cooperative assignor then derives it from owned partitions)
        self.partitions_transferring_ownership: dict[TopicPartition, str] | None = None

    @abstractmethod
    def _member_data(self, subscription: Subscription) -> MemberData:
        """Previous assignment and generation of one member, as this assignor reads them."""

    def _all_subscriptions_equal(
        self,
        topics: JavaHashMap[str, int],
        subscriptions: Mapping[str, Subscription],
        members: Sequence[str],
        owned: JavaHashMap[str, list[TopicPartition]],
        multiply_claimed: JavaHashSet[TopicPartition],
        member_data: dict[str, MemberData],
    ) -> bool:
        all_equal = True
        subscribed: set[str] = set()
        previous_owner: dict[TopicPartition, str] = {}
        for member in members:
            sub = subscriptions[member]
            # the first member with a non-empty subscription sets the reference (as Java)
            if not subscribed:
                subscribed.update(sub.topics)
            elif all_equal and not (
                len(sub.topics) == len(subscribed) and subscribed.issuperset(sub.topics)
            ):
                all_equal = False
            data = self._member_data(sub)
            member_data[member] = data
            generation = DEFAULT_GENERATION if data.generation is None else data.generation
            self.max_generation = max(self.max_generation, generation)
            mine: list[TopicPartition] = []
            owned.put(member, mine)
            for tp in data.partitions:
                if tp.topic not in topics:
                    continue
                other = previous_owner.get(tp)
                if other is None:
                    mine.append(tp)
                    previous_owner[tp] = member
                    continue
                # the other claimant's generation comes from its subscription, not its userData
                other_generation = max(subscriptions[other].generation_id, DEFAULT_GENERATION)
                other_owned = owned[other]
                if generation == other_generation:
                    # claimed twice in one generation: nobody keeps it
                    multiply_claimed.add(tp)
                    if tp in other_owned:
                        other_owned.remove(tp)
                    previous_owner[tp] = member
                elif generation > other_generation:
                    mine.append(tp)
                    if tp in other_owned:
                        other_owned.remove(tp)
                    previous_owner[tp] = member
        return all_equal

    def _assign_lists(
        self, cluster: ClusterMetadata, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        members = member_order(subscriptions)
        topics = partitions_per_topic(cluster, subscriptions, members)
        rack_info = _RackInfo(cluster, topics, subscriptions, members)
        owned: JavaHashMap[str, list[TopicPartition]] = JavaHashMap(java_string_hash)
        multiply_claimed: JavaHashSet[TopicPartition] = JavaHashSet(topic_partition_hash)
        member_data: dict[str, MemberData] = {}
        if self._all_subscriptions_equal(
            topics, subscriptions, members, owned, multiply_claimed, member_data
        ):
            transferring: dict[TopicPartition, str] = {}
            self.partitions_transferring_ownership = transferring
            return _Constrained(topics, rack_info, owned, multiply_claimed, transferring).build()
        self.partitions_transferring_ownership = None
        general = _General(
            topics, rack_info, owned, subscriptions, members, member_data, self.max_generation
        )
        return general.build()

    def assign(
        self, cluster: ClusterMetadata, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """Compute the sticky assignment; see the module docstring.

        Args:
            cluster: partition counts and replica racks.
            subscriptions: member id to subscription, in JoinGroup-response order.

        Returns:
            One assignment per member, in the order of ``subscriptions``.

        Raises:
            AssignmentError: where Kafka's assignor throws for the same input.
        """
        lists = self._assign_lists(cluster, subscriptions)
        return {m: Assignment(tuple(lists[m])) for m in subscriptions}


class StickyAssignor(_StickyBase):
    """Kafka's ``StickyAssignor`` (protocol name ``sticky``, eager).

    One object per consumer, as in Java: it remembers the highest generation it has assigned.
    """

    name = "sticky"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def subscription_user_data(
        self, topics: object, owned: tuple[TopicPartition, ...], generation: int
    ) -> bytes | None:
        """StickyAssignorUserData V1 with the last assignment, ``None`` before the first one.

        Args:
            topics: unused (Kafka ignores them too).
            owned: the member's last assignment (``onAssignment`` in Java).
            generation: the generation of that assignment; -1 if the member never had one.

        Returns:
            The userData bytes, or ``None`` when the member was never assigned.
        """
        if generation < 0 and not owned:
            return None
        return encode_sticky_user_data(owned, generation)

    def _member_data(self, subscription: Subscription) -> MemberData:
        return sticky_member_data(subscription)


class CooperativeStickyAssignor(_StickyBase):
    """Kafka's ``CooperativeStickyAssignor`` (``cooperative-sticky``, cooperative or eager).

    Partitions whose owner changes are left out of the new owner's assignment; the old owner
    revokes them and they are assigned in the next rebalance.
    """

    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def subscription_user_data(
        self, topics: object, owned: tuple[TopicPartition, ...], generation: int
    ) -> bytes | None:
        """CooperativeStickyAssignorUserData V0: the generation of the last assignment.

        Args:
            topics: unused.
            owned: unused (owned partitions travel in the subscription itself).
            generation: the generation of the last assignment, -1 if none.

        Returns:
            The 4-byte userData.
        """
        return encode_cooperative_user_data(generation)

    def _member_data(self, subscription: Subscription) -> MemberData:
        return cooperative_member_data(subscription)

    def _assign_lists(
        self, cluster: ClusterMetadata, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        lists = super()._assign_lists(cluster, subscriptions)
        transferring = self.partitions_transferring_ownership
        if transferring is None:
            transferring = _transferring_ownership(subscriptions, lists)
        for tp, member in transferring.items():
            mine = lists[member]
            if tp in mine:
                mine.remove(tp)
        return lists


def _transferring_ownership(
    subscriptions: Mapping[str, Subscription], lists: Mapping[str, list[TopicPartition]]
) -> dict[TopicPartition, str]:
    """Partitions assigned to a member that some other member still owns and loses."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for member, assigned in lists.items():
        owned = subscriptions[member].owned_partitions
        owned_set = set(owned)
        for tp in assigned:
            if tp not in owned_set:
                added[tp] = member
        assigned_set = set(assigned)
        revoked.update(tp for tp in owned if tp not in assigned_set)
    return {tp: member for tp, member in added.items() if tp in revoked}
