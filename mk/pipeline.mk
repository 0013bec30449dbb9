# The streaming pipeline (lib/offsetscope/pipelines/, lib/offsetscope/spark/): ingest a log
# directory or a cluster into the Delta tables, query them, and its test suites.
# ENV picks conf/<ENV>.toml (default local); CONF adds a further TOML file.
PIPELINE_ARGS = --env $(or $(ENV),local) $(if $(CONF),--conf $(CONF))
SQL ?= SELECT group_id, state, generation, member_count, rebalances_1h FROM groups_current ORDER BY group_id

ingest: install ## run the ingest query per conf/ ([sources], [pipeline]); a line per micro-batch
	$(PY) -m jobs.ingest $(PIPELINE_ARGS)

maintain: install ## retention, downsampling, OPTIMIZE and VACUUM per conf/ [maintenance]; a line per step
	$(PY) -m jobs.maintain $(PIPELINE_ARGS)

migrate: install ## rewrite the tables whose declaration changed beyond new nullable columns
	$(PY) -m offsetscope.cli migrate $(PIPELINE_ARGS)

sql: install ## answer SQL="..." from the offsetscope tables (default: the current groups)
	$(PY) -m offsetscope.cli sql "$(SQL)" $(PIPELINE_ARGS)

test-spark: install ## Spark transform tests and segment-directory streaming tests (one JVM)
	$(PY) -m pytest -m "(spark or streaming) and not kafka and not slow" -q tests/spark tests/streaming

test-streaming: install ## the streaming suite only: segment source, ingest restart, live broker
	$(PY) -m pytest -m "streaming and not slow" -q tests/streaming


.PHONY: ingest maintain migrate sql test-spark test-streaming
