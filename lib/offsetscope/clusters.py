"""Several Kafka clusters in one deployment: names, keys and per-cluster settings.

A deployment reads the clusters of ``[clusters.<name>]`` (or the one of ``[sources]``, named by
``[sources] cluster``; :func:`offsetscope.config.clusters`). Group ids and transactional ids
are unique only within a cluster, so every table carries a ``cluster`` column in its rows and
in its key, and everything that is keyed by a group or a transactional id is keyed by the
cluster first:

* the folds' state (``fold_state``): the cluster is part of the table's key, and the driver's
  mirror of it is keyed by :class:`StateKey`;
* per-group settings (``[alerts.<rule>.groups."<key>"]``): a key ``"<cluster>/<group or glob>"``
  applies in that cluster only, a key without a cluster prefix in every cluster
  (:func:`override_for`);
* alerts: each is one cluster's (``alerts.cluster``), its id hashes the cluster but for the
  default one (:meth:`offsetscope.alerts.model.Finding.in_cluster`), and a deployment of
  several clusters names it in notifications (:func:`subject`).

The history folds (:mod:`offsetscope.history`) know nothing of clusters: the pipeline folds
each cluster's records apart and tags what comes out.
"""

from __future__ import annotations

import fnmatch
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import NamedTuple, TypeVar

T = TypeVar("T")

COLUMN = "cluster"
# Between a cluster name and a group id in override keys and alert subjects; cluster names
# cannot hold it (offsetscope.config.ClusterName).
SEPARATOR = "/"


class StateKey(NamedTuple):
    """A fold state's key: the cluster, the fold, the fold's own key (a group id, ...)."""

    cluster: str
    fold: str
    key: str


def split_key(key: str, clusters: Collection[str]) -> tuple[str | None, str]:
    """An override key as (cluster or ``None`` for every cluster, group id or glob).

    A prefix counts as a cluster only when it names a configured one: a Kafka group id may hold
    a "/" itself (``"team/payments"`` is a group id unless ``team`` is a cluster).
    """
    head, sep, rest = key.partition(SEPARATOR)
    if sep and head in clusters:
        return head, rest
    return None, key


def override_for(
    overrides: Mapping[str, T], cluster: str, group: str, clusters: Collection[str]
) -> T | None:
    """The override of ``group`` in ``cluster``, or ``None``.

    Precedence: the exact id in this cluster, the exact id in every cluster, then the glob
    patterns in the order written (each only in its own cluster when it names one).
    """
    exact = overrides.get(f"{cluster}{SEPARATOR}{group}")
    if exact is not None and cluster in clusters:
        return exact
    if group in overrides and split_key(group, clusters)[0] is None:
        return overrides[group]
    for written, value in overrides.items():
        only_in, pattern = split_key(written, clusters)
        if only_in not in (None, cluster):
            continue
        if fnmatch.fnmatchcase(group, pattern):
            return value
    return None


def subject(cluster: str, subject_id: str, *, several: bool) -> str:
    """An alert's subject as notifications name it: ``"<cluster>/<id>"`` when the deployment
    reads several clusters; the id alone when it reads one, whose messages need no cluster."""
    return f"{cluster}{SEPARATOR}{subject_id}" if several else subject_id


def by_cluster(rows: Iterable[T], cluster_of: Callable[[T], str]) -> dict[str, list[T]]:
    """``rows`` grouped by cluster, in order within each."""
    out: dict[str, list[T]] = defaultdict(list)
    for row in rows:
        out[cluster_of(row)].append(row)
    return dict(out)
