"""The only layer that imports pyspark: session builder, decode adapter, sources, Delta writes.

Importing this package starts nothing; :func:`offsetscope.spark.session.build_session` builds
the session when an entry point or a test fixture asks for it.
"""

from __future__ import annotations
