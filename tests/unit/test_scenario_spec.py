"""Scenario files: every catalogue file parses; errors name the offending key path."""

from __future__ import annotations

import textwrap

import pytest

from offsetscope.sim.scenarios.catalogue import catalogue_path, names
from offsetscope.sim.scenarios.spec import (
    ConsumerSpec,
    ScenarioError,
    load_scenario,
    parse_scenario,
)

BASE = textwrap.dedent(
    """
    [scenario]
    name = "t"
    duration = "2m"

    [[topics]]
    name = "orders"
    partitions = 3

    [[groups]]
    id = "g"
    topics = ["orders"]
    members = 2
    """
)


def _parse(extra: str = "", base: str = BASE, **kw: object) -> object:
    return parse_scenario(base + textwrap.dedent(extra), **kw)  # type: ignore[arg-type]


def test_the_catalogue_has_every_required_scenario() -> None:
    required = {
        "steady",
        "scale-out-in",
        "consumer-crash",
        "slow-consumer",
        "rolling-restart-dynamic",
        "rolling-restart-static",
        "rebalance-storm",
        "cooperative",
        "protocol-vote",
        "offset-expiry",
        "transactions",
        "demo",
        "scale",
    }
    assert required <= set(names())
    assert catalogue_path("no-such-scenario") is None


@pytest.mark.parametrize("name", names())
def test_catalogue_scenarios_parse(name: str) -> None:
    scenario = load_scenario(name)
    assert scenario.name == name
    assert scenario.description
    assert scenario.duration_ms > 0
    assert scenario.groups or scenario.pipelines


def test_defaults_are_the_java_consumers() -> None:
    scenario = _parse()
    group = scenario.groups[0]  # type: ignore[attr-defined]
    assert group.consumer == ConsumerSpec()
    assert group.consumer.assignors == ("range", "cooperative-sticky")
    assert (group.consumer.session_timeout_ms, group.consumer.heartbeat_interval_ms) == (
        45_000,
        3_000,
    )
    assert group.consumer.max_poll_interval_ms == 300_000
    assert scenario.duration_ms == 120_000  # type: ignore[attr-defined]


def test_durations_and_repeats_expand() -> None:
    scenario = _parse(
        """
        [[timeline]]
        at = "10s"
        action = "crash"
        group = "g"
        member = 0
        every = "250ms"
        times = 3

        [[timeline]]
        at = 5000
        action = "join"
        group = "g"
        """
    )
    timeline = scenario.timeline  # type: ignore[attr-defined]
    assert [(a.at_ms, a.action) for a in timeline] == [
        (5000, "join"),
        (10_000, "crash"),
        (10_250, "crash"),
        (10_500, "crash"),
    ]
    assert timeline[1].key_path == "timeline[0]"


def test_parameters_substitute_and_override() -> None:
    text = textwrap.dedent(
        """
        [scenario]
        name = "p"
        duration = "$length"

        [parameters]
        groups = 3
        length = "30s"

        [[topics]]
        name = "t"
        partitions = 2

        [[groups]]
        id = "g-{i:02d}"
        count = "$groups"
        topics = ["t"]
        """
    )
    scenario = parse_scenario(text)
    assert [g.id for g in scenario.groups] == ["g-00", "g-01", "g-02"]
    assert scenario.duration_ms == 30_000
    again = parse_scenario(text, params={"groups": "5", "length": "1m"}, seed=9)
    assert len(again.groups) == 5
    assert (again.duration_ms, again.seed) == (60_000, 9)


def test_members_of_one_group_may_differ() -> None:
    scenario = _parse(
        """
        [[groups]]
        id = "g"
        name = "g-roundrobin"
        topics = ["orders"]
        assignors = ["roundrobin"]
        """
    )
    groups = scenario.groups  # type: ignore[attr-defined]
    assert [(g.id, g.client_prefix, g.consumer.assignors) for g in groups] == [
        ("g", "g", ("range", "cooperative-sticky")),
        ("g", "g-roundrobin", ("roundrobin",)),
    ]


@pytest.mark.parametrize(
    ("extra", "key_path"),
    [
        ("[surprise]\nx = 1\n", "surprise"),
        ("[broker]\noffsets_topic_partition = 3\n", "broker.offsets_topic_partition"),
        ("[broker]\noffsets_topic_partitions = 0\n", "broker.offsets_topic_partitions"),
        ('[broker]\ninitial_rebalance_delay_ms = "soon"\n', "broker.initial_rebalance_delay_ms"),
        ("[log]\nsegment_bytes = 10\n", "log.segment_bytes"),
        ('[[topics]]\nname = "orders"\npartitions = 1\n', "topics[1].name"),
        ('[[topics]]\nname = "__x"\npartitions = 1\n', "topics[1].name"),
        ('[[topics]]\nname = "bad name"\npartitions = 1\n', "topics[1].name"),
        ('[[topics]]\nname = "x"\npartitions = 0\n', "topics[1].partitions"),
        (
            '[[groups]]\nid = "h"\ntopics = ["orders"]\nsession_timout = "5s"\n',
            "groups[1].session_timout",
        ),
        (
            '[[groups]]\nid = "h"\ntopics = ["orders"]\nsession_timeout = "5 sec"\n',
            "groups[1].session_timeout",
        ),
        (
            '[[groups]]\nid = "h"\ntopics = ["orders"]\nassignors = ["fair"]\n',
            "groups[1].assignors[0]",
        ),
        (
            '[[groups]]\nid = "h"\ntopics = ["orders"]\nheartbeat_interval = "50s"\n',
            "groups[1].heartbeat_interval",
        ),
        ('[[groups]]\nid = "h"\ntopics = ["nope"]\n', "groups[1].topics[0]"),
        ('[[groups]]\nid = "h"\ntopics = ["orders"]\ncount = 2\n', "groups[1].id"),
        ('[[groups]]\nid = "h"\ntopics = ["orders"]\ncommit = "sometimes"\n', "groups[1].commit"),
        ('[[groups]]\nid = "g"\ntopics = ["orders"]\n', "groups[1].name"),
        ('[[producers]]\nname = "p"\ntopic = "orders"\n', "producers[0].rate"),
        ('[[producers]]\nname = "p"\ntopic = "orders"\nrate = -1\n', "producers[0].rate"),
        (
            '[[pipelines]]\nname = "x"\ninput = "orders"\noutput = "orders"\n',
            "pipelines[0].output",
        ),
        (
            '[[pipelines]]\nname = "x"\ninput = "orders"\noutput = "nope"\n',
            "pipelines[0].output",
        ),
        ('[[timeline]]\nat = "1s"\naction = "jion"\ngroup = "g"\n', "timeline[0].action"),
        ('[[timeline]]\nat = "1s"\naction = "crash"\ngroup = "g"\n', "timeline[0].member"),
        (
            '[[timeline]]\nat = "1s"\naction = "leave"\ngroup = "x"\nmember = 0\n',
            "timeline[0].group",
        ),
        ('[[timeline]]\nat = "5m"\naction = "join"\ngroup = "g"\n', "timeline[0].at"),
        (
            '[[timeline]]\nat = "1s"\naction = "join"\ngroup = "g"\ntimes = 3\n',
            "timeline[0].every",
        ),
        (
            '[[timeline]]\nat = "1s"\naction = "crash"\ngroup = "g"\nmember = true\n',
            "timeline[0].member",
        ),
        (
            '[[timeline]]\nat = "1s"\naction = "txn_abort"\npipeline = "none"\n',
            "timeline[0].pipeline",
        ),
    ],
)
def test_errors_name_the_key_path(extra: str, key_path: str) -> None:
    with pytest.raises(ScenarioError) as error:
        _parse(extra)
    assert error.value.key_path == key_path
    assert key_path in str(error.value)


def test_missing_and_mistyped_sections() -> None:
    with pytest.raises(ScenarioError) as error:
        parse_scenario('[[topics]]\nname = "a"\npartitions = 1\n')
    assert error.value.key_path == "scenario"
    with pytest.raises(ScenarioError) as error:
        parse_scenario('[scenario]\nname = "a"\n')
    assert error.value.key_path == "topics"
    with pytest.raises(ScenarioError) as error:
        parse_scenario("[scenario\n")
    assert error.value.key_path == ""
    assert "not valid TOML" in str(error.value)


def test_parameter_errors() -> None:
    text = BASE.replace('duration = "2m"', 'duration = "$d"') + '\n[parameters]\nd = "1m"\nn = 3\n'
    with pytest.raises(ScenarioError) as error:
        parse_scenario(text, params={"m": "1"})
    assert error.value.key_path == "parameters.m"
    with pytest.raises(ScenarioError) as error:
        parse_scenario(text, params={"n": "three"})
    assert error.value.key_path == "parameters.n"
    with pytest.raises(ScenarioError) as error:
        parse_scenario(BASE.replace('duration = "2m"', 'duration = "$nope"'))
    assert error.value.key_path == "scenario.duration"


def test_unknown_scenario_name_or_file() -> None:
    with pytest.raises(ScenarioError, match="no catalogue entry"):
        load_scenario("definitely-not-there")
    with pytest.raises(ScenarioError, match="does not exist"):
        load_scenario("/nonexistent/file.toml")
