"""dump-log's column-wise JSON strings are exactly what Jackson (and ``json_format.dumps``) write.

``_json_strings`` quotes a whole column at once and escapes only when some string needs it,
which it decides from the column's bytes; these cases make it take both ways, and a column
that is a slice of a larger one (its strings start inside the data buffer).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from offsetscope.protocol.dump_log import _any_escapable_byte, _json_strings
from offsetscope.protocol.json_format import dumps

PLAIN = ["group-1", "", "orders.eu-west", "grüße", "消费者"]
ESCAPED = ['say "hi"', "back\\slash", "tab\there", "nul\x00", "line\nbreak", "\x1f"]


@pytest.mark.parametrize(
    "values",
    [PLAIN, ESCAPED, PLAIN + ESCAPED, [None, *PLAIN], [*ESCAPED, None]],
    ids=["plain", "escaped", "mixed", "plain-with-null", "escaped-with-null"],
)
def test_json_strings_equal_dumps(values: list[str | None]) -> None:
    rendered = _json_strings(pa.array(values, pa.string())).to_pylist()
    assert rendered == [None if v is None else dumps(v) for v in values]


def test_escapes_are_found_only_inside_a_slice() -> None:
    column = pa.array([*ESCAPED, *PLAIN, *ESCAPED], pa.string())
    inner = column.slice(len(ESCAPED), len(PLAIN))
    assert not _any_escapable_byte(inner)
    assert _json_strings(inner).to_pylist() == [dumps(v) for v in PLAIN]
    assert _any_escapable_byte(column.slice(len(ESCAPED) - 1, 2))
    assert _json_strings(column.slice(len(ESCAPED) - 1, 2)).to_pylist() == [
        dumps(ESCAPED[-1]),
        dumps(PLAIN[0]),
    ]
