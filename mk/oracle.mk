# Kafka's DumpLogSegments as the oracle for offsetscope's decoder (lib/offsetscope/verify/oracle.py):
# a fresh harness broker under .work/kafka/oracle/, driven by real clients through every
# scenario plus commit traffic, stopped, then every __consumer_offsets / __transaction_state
# segment is dumped by Kafka's tool and decoded by offsetscope and compared record by record.
# Ends with "oracle: N records compared, M differ"; fails unless M = 0 and N >= 1,000.
# ORACLE_ARGS passes options, e.g. ORACLE_ARGS="--log-dir .work/kafka/default/data" to compare
# an existing broker's log, or ORACLE_ARGS="--offsets-compression zstd".
ORACLE_ARGS ?=

oracle: install ## DumpLogSegments vs offsetscope on a real broker's internal topics (~2 min)
	$(PY) -m offsetscope.verify.oracle --env $(or $(ENV),local) $(ORACLE_ARGS)

.PHONY: oracle
