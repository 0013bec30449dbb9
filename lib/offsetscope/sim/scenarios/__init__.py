"""The scenario engine: simulated Kafka clients driving the bundled coordinators.

A *scenario* (a TOML file; the format is documented in ``scenarios/README.md`` and
:mod:`.spec`) says which topics exist, which producers write to them, which consumer groups and
read-process-write pipelines read them, and what happens when (members joining, leaving,
crashing, stalling, restarting with or without static membership, commits, group deletion,
transactions aborted, timed out or fenced by a zombie's successor). Running it
(:func:`~offsetscope.sim.scenarios.engine.simulate`) on a virtual clock gives, for a seed, the same
bytes every time:

* :mod:`.cluster` -- one broker: virtual clock, partition logs, group + transaction coordinators,
  scheduler;
* :mod:`.clients` -- the Java consumer's group membership, heartbeat thread and poll loop;
  idempotent and transactional producers;
* :mod:`.apps` -- rate-driven producers and exactly-once pipelines around those clients;
* :mod:`.engine` -- builds everything from a scenario, applies the timeline, samples lag;
* :mod:`.truth` -- ``ground_truth.jsonl``: every state transition, generation, member, assignment,
  commit, transaction outcome and lag sample;
* :mod:`.logdir` -- the Kafka log directory (``PartitionWriter``); :mod:`.mirror` -- the same
  records produced to a real broker;
* :mod:`.cli` -- ``offsetscope simulate``; :mod:`.catalogue` -- the shipped scenarios.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from offsetscope.sim.scenarios.spec import (
        Scenario,
        ScenarioError,
        load_scenario,
        parse_scenario,
    )

__all__ = ["Scenario", "ScenarioError", "load_scenario", "parse_scenario"]


def __getattr__(name: str) -> Any:
    # Imported on first use (PEP 562): ``offsetscope decode`` imports this package to register
    # the ``simulate`` sub-command, and the spec module pulls in the coordinator.
    if name in __all__:
        from offsetscope.sim.scenarios import spec

        return getattr(spec, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
