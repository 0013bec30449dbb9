"""OffsetCommit: generation and member validation exactly where Kafka applies it."""

from __future__ import annotations

from offsetscope.protocol.states import ClassicGroupState as S
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.messages import MemberIdentity, OffsetCommitResponse
from offsetscope.sim.coordinator.group.testing import GroupTestContext

G = "ledger"
FOO0 = ("foo", 0)


def only_error(response: OffsetCommitResponse) -> Errors:
    errors = set(response.errors().values())
    assert len(errors) == 1
    return errors.pop()


def test_a_simple_commit_creates_an_implicit_group_without_a_group_record() -> None:
    ctx = GroupTestContext.builder().build()
    response = ctx.commit(G, {FOO0: 10, ("foo", 1): 11})
    assert response.errors() == {FOO0: Errors.NONE, ("foo", 1): Errors.NONE}
    group = ctx.group(G)
    assert group.state is S.EMPTY
    assert group.is_simple_group()
    assert [r.record_type for r in ctx.records()] == [1, 1]
    assert [type(e) for e in ctx.events] == [ev.GroupCreated]
    assert ctx.fetch(G, [FOO0]).offsets()[FOO0].committed_offset == 10


def test_commit_with_a_generation_to_a_missing_group() -> None:
    ctx = GroupTestContext.builder().build()
    assert only_error(ctx.commit(G, {FOO0: 1}, generation_id=1, member_id="m")) is (
        Errors.GROUP_ID_NOT_FOUND
    )
    assert only_error(ctx.commit(G, {FOO0: 1}, generation_id=1, member_id="m", api_version=8)) is (
        Errors.ILLEGAL_GENERATION
    )
    assert not ctx.has_group(G)
    assert ctx.records() == []


def test_members_commit_with_their_generation() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"])
    a = formed["a"]
    ok = ctx.commit(G, {FOO0: 5}, generation_id=formed.generation, member_id=a)
    assert only_error(ok) is Errors.NONE
    stale = ctx.commit(G, {FOO0: 6}, generation_id=formed.generation - 1, member_id=a)
    assert only_error(stale) is Errors.ILLEGAL_GENERATION
    unknown = ctx.commit(G, {FOO0: 6}, generation_id=formed.generation, member_id="nobody")
    assert only_error(unknown) is Errors.UNKNOWN_MEMBER_ID
    # A v0-style commit (no generation, no member) on a non-empty group.
    assert only_error(ctx.commit(G, {FOO0: 6})) is Errors.UNKNOWN_MEMBER_ID
    # A member id with generation -1 is still checked against the generation.
    assert only_error(ctx.commit(G, {FOO0: 6}, member_id=a)) is Errors.ILLEGAL_GENERATION
    assert ctx.fetch(G, [FOO0]).offsets()[FOO0].committed_offset == 5


def test_commit_while_completing_rebalance_is_rebalance_in_progress() -> None:
    ctx = GroupTestContext.builder().build()
    a, pending = ctx.join_dynamic(G)
    ctx.advance(3_000)
    generation = pending.result().generation_id
    assert ctx.group(G).state is S.COMPLETING_REBALANCE
    response = ctx.commit(G, {FOO0: 1}, generation_id=generation, member_id=a)
    assert only_error(response) is Errors.REBALANCE_IN_PROGRESS


def test_commit_during_preparing_rebalance_with_the_previous_generation_is_allowed() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"])
    ctx.join(G, member_id=formed["a"])  # leader rejoins: rebalance
    assert ctx.group(G).state is S.PREPARING_REBALANCE
    response = ctx.commit(G, {FOO0: 9}, generation_id=formed.generation, member_id=formed["b"])
    assert only_error(response) is Errors.NONE


def test_commit_from_a_fenced_static_member() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a"], static=True)
    response = ctx.commit(
        G, {FOO0: 1}, generation_id=formed.generation, member_id="a-old", group_instance_id="a"
    )
    assert only_error(response) is Errors.FENCED_INSTANCE_ID


def test_simple_commits_are_accepted_once_the_group_is_empty_again() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a"])
    ctx.leave(G, MemberIdentity(formed["a"]))
    assert only_error(ctx.commit(G, {FOO0: 3})) is Errors.NONE
    # An old member committing with its generation on an Empty group is unknown.
    old = ctx.commit(G, {FOO0: 4}, generation_id=formed.generation, member_id=formed["a"])
    assert only_error(old) is Errors.UNKNOWN_MEMBER_ID


def test_commits_keep_the_member_session_alive() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a"], session_timeout_ms=10_000)
    for _ in range(5):
        ctx.advance(9_000)
        ctx.commit(G, {FOO0: 1}, generation_id=formed.generation, member_id=formed["a"])
    assert ctx.group(G).has_member(formed["a"])
    ctx.advance(10_000)
    assert not ctx.group(G).has_member(formed["a"])


def test_metadata_longer_than_the_limit_is_refused_per_partition() -> None:
    ctx = GroupTestContext.builder().with_config(offset_metadata_max_bytes=4).build()
    ok = ctx.commit(G, {FOO0: 1}, metadata="abcd")
    assert only_error(ok) is Errors.NONE
    # Kafka compares the Java string length (UTF-16 units): one emoji counts 2.
    assert only_error(ctx.commit(G, {FOO0: 2}, metadata="ab\U0001f600")) is Errors.NONE
    too_long = ctx.commit(G, {FOO0: 3}, metadata="abcde")
    assert only_error(too_long) is Errors.OFFSET_METADATA_TOO_LARGE
    assert [r.value["offset"] for r in ctx.records() if r.value] == [1, 2]
    assert ctx.fetch(G, [FOO0]).offsets()[FOO0].metadata == "ab\U0001f600"


def test_commit_record_fields() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.advance(123)
    ctx.commit(G, {FOO0: 77}, leader_epoch=3, metadata=None)
    (record,) = ctx.records()
    assert record.key == {"group": G, "topic": "foo", "partition": 0}
    assert record.value is not None
    assert record.value["offset"] == 77
    assert record.value["leaderEpoch"] == 3
    assert record.value["metadata"] == ""  # null metadata is stored as ""
    assert record.value["commitTimestamp"] == ctx.now
    fetched = ctx.fetch(G, [FOO0]).offsets()[FOO0]
    assert (fetched.committed_offset, fetched.committed_leader_epoch, fetched.metadata) == (
        77,
        3,
        "",
    )
