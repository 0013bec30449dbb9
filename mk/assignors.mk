# Kafka's own partition assignors (kafka-clients in build/jvm/kafka/) as the oracle for
# lib/offsetscope/sim/coordinator/assignors: tests/jvm compiles OffsetscopeAssignorOracle.java with
# javac and compares seeded random groups and rebalance sequences. Also part of `make test`.

test-assignors-oracle: install jvm-jars ## our assignors vs Kafka's on random groups (JVM, ~30 s)
	$(PY) -m pytest -q tests/jvm

.PHONY: test-assignors-oracle
