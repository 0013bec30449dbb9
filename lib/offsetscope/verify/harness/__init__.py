"""Test and demo infrastructure: a real Kafka broker process and Kafka's own tools.

Nothing here is used by the pipelines. Tests (``tests/conftest.py``), the live demo and the
benchmarks start a broker with :class:`offsetscope.verify.harness.broker.Broker` and compare decoders
with :func:`offsetscope.verify.harness.broker.run_dump_log`; :mod:`offsetscope.verify.harness.jars` keeps
the resolved classpaths clean. The JVM jars come from ``make install`` (``deploy/jvm/pom.xml``).
The modules are imported one by one (``python -m offsetscope.verify.harness.broker`` runs one as a
script), so this package imports none of them.
"""

from __future__ import annotations
