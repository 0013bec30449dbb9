"""The quality suites' key checks hold within a cluster: one batch writes every cluster's rows
of a table (the clusters' writes are combined), and the same group id or ``__consumer_offsets``
position in two clusters is two rows, not a duplicate key."""

from __future__ import annotations

import datetime as dt

from offsetscope.quality import suites
from offsetscope.quality.validate import key_scope

EARLIEST = dt.datetime(2010, 1, 1, tzinfo=dt.UTC)
LATEST = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


def _unique(table: str, **kw: object) -> suites.Check:
    (check,) = [
        c for c in suites.checks_for(table, EARLIEST, LATEST, **kw) if c.name.startswith("unique:")
    ]
    return check


def test_the_key_is_unique_within_the_cluster_of_rows_that_carry_one() -> None:
    check = _unique("groups_current", within=key_scope(["group_id", "state", "cluster"]))
    assert check.name == "unique:group_id"  # the name is the table's key, as before
    assert check.expectation == "ExpectCompoundColumnsToBeUnique"
    assert dict(check.kwargs) == {"column_list": ["group_id", "cluster"]}
    assert "cluster" in check.columns  # collected with the checked columns
    commits = _unique("offset_commits", within=("cluster",))
    assert dict(commits.kwargs)["column_list"] == ["record_partition", "record_offset", "cluster"]


def test_rows_without_a_cluster_keep_the_plain_key() -> None:
    assert key_scope(["group_id", "state"]) == ()
    check = _unique("groups_current")
    assert (check.name, check.expectation) == ("unique:group_id", "ExpectColumnValuesToBeUnique")
    assert dict(check.kwargs) == {"column": "group_id"}
