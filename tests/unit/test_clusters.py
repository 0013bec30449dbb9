"""Several clusters in one deployment: ``[clusters.<name>]``, the default cluster, keys and
per-cluster overrides (no Spark)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from offsetscope import clusters, config
from offsetscope.config import Config, InvalidConfigError, load
from offsetscope.pipelines import batch
from offsetscope.pipelines.writer import BatchWriter, Write

TWO_CLUSTERS = """
[clusters.east]
kind = "kafka"
[clusters.east.kafka]
bootstrap_servers = "east-1:9093"
[clusters.east.kafka.security]
protocol = "SASL_SSL"
sasl_mechanism = "SCRAM-SHA-512"
sasl_username = "offsetscope"
sasl_password = "env:EAST_PASSWORD"

[clusters.west]
kind = "kafka"
[clusters.west.kafka]
bootstrap_servers = "west-1:9092"
"""


def _load(tmp_path: Path, text: str) -> Config:
    (tmp_path / "base.toml").write_text(text)
    return load("base", tmp_path)


def test_a_single_cluster_configuration_is_the_default_cluster() -> None:
    cfg = load("local")
    assert cfg.clusters == {}
    assert cfg.sources.cluster == "default"
    assert list(config.clusters(cfg)) == ["default"]
    assert config.clusters(cfg)["default"] is cfg.sources
    assert config.default_cluster(cfg) == "default"
    assert config.cluster_key_path(cfg, "default") == "sources"


def test_the_default_cluster_can_be_renamed(tmp_path: Path) -> None:
    cfg = _load(tmp_path, '[sources]\ncluster = "prod-eu"\nkind = "kafka"\n')
    assert list(config.clusters(cfg)) == ["prod-eu"]
    assert config.for_cluster(cfg, "prod-eu").sources.kind == "kafka"


def test_clusters_each_have_their_source_and_security(tmp_path: Path) -> None:
    cfg = _load(tmp_path, TWO_CLUSTERS)
    found = config.clusters(cfg)
    assert sorted(found) == ["east", "west"]
    assert found["east"].kafka.bootstrap_servers == "east-1:9093"
    assert found["east"].kafka.security.sasl_mechanism == "SCRAM-SHA-512"
    assert found["west"].kafka.security.protocol == "PLAINTEXT"
    assert config.cluster_key_path(cfg, "east") == "clusters.east"
    # [sources] still names the cluster of rows written before tables had a cluster column.
    assert config.default_cluster(cfg) == "default"


def test_for_cluster_is_a_single_cluster_configuration(tmp_path: Path) -> None:
    cfg = _load(tmp_path, TWO_CLUSTERS)
    east = config.for_cluster(cfg, "east")
    assert east.clusters == {}
    assert east.sources.cluster == "east"
    assert east.sources.kind == "kafka"
    assert east.sources.kafka.bootstrap_servers == "east-1:9093"
    assert east.storage == cfg.storage
    with pytest.raises(InvalidConfigError, match=r"'north' is not configured.*east, west"):
        config.for_cluster(cfg, "north")


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (
            '[clusters.east.kafka]\nbootstrap_serverz = "x"\n',
            "clusters.east.kafka.bootstrap_serverz",
        ),
        ('[clusters.east]\nkind = "ftp"\n', "clusters.east.kind"),
        (
            '[clusters.east.kafka.security]\nprotocol = "SASL_SSL"\n',
            "clusters.east.kafka.security.sasl_mechanism",
        ),
        # [clusters.<name>] has no cluster key: the table's key is the name.
        ('[clusters.east]\ncluster = "x"\n', "clusters.east.cluster"),
        ('[sources]\ncluster = "a/b"\n', "sources.cluster"),
        ('[clusters."a/b"]\nkind = "kafka"\n', "clusters.a/b"),
        (
            '[clusters.east]\nkind = "kafka"\n[clusters.west]\nkind = "segments"\n',
            "clusters.east.kind",
        ),
    ],
)
def test_bad_cluster_configuration_names_the_key(tmp_path: Path, text: str, path: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        _load(tmp_path, text)
    assert info.value.key_path.startswith(path)
    assert path in str(info.value)


def test_an_environment_variable_overrides_one_cluster_key(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(TWO_CLUSTERS)
    cfg = load(
        "base",
        tmp_path,
        environ={"OFFSETSCOPE__CLUSTERS__WEST__KAFKA__BOOTSTRAP_SERVERS": "west-2:9092"},
    )
    assert cfg.clusters["west"].kafka.bootstrap_servers == "west-2:9092"
    assert cfg.clusters["east"].kafka.bootstrap_servers == "east-1:9093"


# ----------------------------------------------------------------------------- keys and overrides

NAMES = ("east", "west")


def test_state_keys_carry_the_cluster() -> None:
    a = clusters.StateKey("east", "group", "payments")
    b = clusters.StateKey("west", "group", "payments")
    assert a != b
    assert {a: 1, b: 2}[clusters.StateKey("west", "group", "payments")] == 2


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("east/payments", ("east", "payments")),
        ("east/pay-*", ("east", "pay-*")),
        ("payments", (None, "payments")),
        # Not a configured cluster: a group id holding a "/".
        ("team/payments", (None, "team/payments")),
    ],
)
def test_override_keys_name_a_cluster_only_when_it_is_configured(
    key: str, expected: tuple[str | None, str]
) -> None:
    assert clusters.split_key(key, NAMES) == expected


def test_override_precedence_per_cluster() -> None:
    overrides = {
        "pay-*": "glob everywhere",
        "west/pay-*": "glob in west",
        "payments": "exact everywhere",
        "east/payments": "exact in east",
        "team/payments": "a group id with a slash",
    }

    def find(cluster: str, group: str) -> str | None:
        return clusters.override_for(overrides, cluster, group, NAMES)

    assert find("east", "payments") == "exact in east"
    assert find("west", "payments") == "exact everywhere"
    assert find("east", "pay-eu") == "glob everywhere"
    assert find("east", "team/payments") == "a group id with a slash"
    assert find("east", "other") is None
    only_west = {"west/pay-*": "glob in west"}
    assert clusters.override_for(only_west, "west", "pay-eu", NAMES) == "glob in west"
    assert clusters.override_for(only_west, "east", "pay-eu", NAMES) is None
    # A key naming a cluster never matches a group id of that spelling elsewhere.
    assert clusters.override_for({"east/payments": 1}, "west", "east/payments", NAMES) is None


def test_subjects_carry_the_cluster_only_with_several() -> None:
    assert clusters.subject("east", "payments", several=True) == "east/payments"
    assert clusters.subject("default", "payments", several=False) == "payments"


def test_rows_are_routed_by_cluster_in_order() -> None:
    rows = [("east", 1), ("west", 2), ("east", 3)]
    assert clusters.by_cluster(rows, lambda r: r[0]) == {
        "east": [("east", 1), ("east", 3)],
        "west": [("west", 2)],
    }


# ----------------------------------------------------------------------------- routing in a batch


def _two_segment_clusters() -> Config:
    base = config.with_pipeline(load("local"), sample_end_offsets=False)
    two = {
        name: config.ClusterConfig(
            kind="segments",
            segments=dataclasses.replace(base.sources.segments, log_dir=f"/logs/{name}"),
        )
        for name in NAMES
    }
    return dataclasses.replace(base, clusters=two)


def test_a_batch_routes_its_source_partitions_by_cluster() -> None:
    pipe = batch.IngestPipeline(_two_segment_clusters())
    stats = [
        {"topic": "__consumer_offsets", "partition": 0, "cluster": "east"},
        {"topic": "__consumer_offsets", "partition": 0, "cluster": "west"},
        {"topic": "__transaction_state", "partition": 1, "cluster": "east"},
    ]
    routed = pipe._by_cluster(stats)
    assert routed == {"east": [stats[0], stats[2]], "west": [stats[1]]}
    # Rows of several clusters that do not name theirs cannot be routed.
    with pytest.raises(ValueError, match="must name theirs"):
        pipe._by_cluster([{"topic": "__consumer_offsets", "partition": 0}])
    single = batch.IngestPipeline(config.with_pipeline(load("local"), sample_end_offsets=False))
    assert single._by_cluster([{"partition": 0}]) == {"default": [{"partition": 0}]}


def test_each_cluster_has_its_own_source_settings() -> None:
    cfg = _two_segment_clusters()
    pipe = batch.IngestPipeline(cfg)
    assert pipe.clusters == NAMES
    assert pipe.kind == "segments"
    assert pipe.reads_from_start == {"east": True, "west": True}
    with pytest.raises(ValueError, match="one sampler for several clusters"):
        batch.IngestPipeline(cfg, sampler=object())  # type: ignore[arg-type]


def test_the_writes_of_several_clusters_are_one_write_per_table_and_kind() -> None:
    east = pa.table({"x": [1]})
    west = pa.table({"x": [2, 3]})
    tasks = [
        Write("groups_current", True, lambda: east, 1, ("t.`cluster` IN ('east')",)),
        Write("end_offsets", False, lambda: east, 1),
        Write("groups_current", True, lambda: west, 2, ("t.`cluster` IN ('west')",)),
        Write("groups_current", False, lambda: west, 2),
    ]
    combined = BatchWriter.combine(tasks)
    assert [(w.logical, w.merge, w.rows) for w in combined] == [
        ("groups_current", True, 3),
        ("end_offsets", False, 1),
        ("groups_current", False, 2),
    ]
    merged = combined[0]
    assert merged.source is not None
    assert callable(merged.source)
    assert merged.source().column("x").to_pylist() == [1, 2, 3]  # type: ignore[operator]
    # A MERGE is restricted to what any of its parts is.
    assert merged.prune == ("(t.`cluster` IN ('east')) OR (t.`cluster` IN ('west'))",)
    # Without a restriction on one part, none on the whole.
    open_ended = BatchWriter.combine([tasks[0], dataclasses.replace(tasks[2], prune=())])
    assert open_ended[0].prune == ()


def test_a_combined_write_knows_its_key_unique_only_when_every_part_does() -> None:
    east = pa.table({"x": [1]})
    known = Write("offset_commits", False, lambda: east, 1, unique_key=True)
    unknown = Write("offset_commits", False, lambda: east, 1)
    assert BatchWriter.combine([known, dataclasses.replace(known)])[0].unique_key
    assert not BatchWriter.combine([known, unknown])[0].unique_key
