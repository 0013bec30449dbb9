# The project's single-node KRaft broker (lib/offsetscope/verify/harness/broker.py), configured by the
# [broker] section of conf/; data and logs under .work/kafka/<name>/. Pass ENV=<env> for
# conf/<env>.toml and BROKER=<name> for a second broker next to the default one.
ENV ?= local
BROKER_ARGS = --env $(ENV) $(if $(BROKER),--name $(BROKER))

kafka-up: install ## start the local Kafka broker (prints its bootstrap address)
	$(PY) -m offsetscope.verify.harness.broker up $(BROKER_ARGS)

kafka-down: ## stop the local Kafka broker (KEEP its data; kafka-wipe deletes it)
	$(PY) -m offsetscope.verify.harness.broker down $(BROKER_ARGS)

kafka-wipe: ## stop the local Kafka broker and delete its data and logs
	$(PY) -m offsetscope.verify.harness.broker down --wipe $(BROKER_ARGS)

kafka-status: ## is the local Kafka broker running, and where
	@$(PY) -m offsetscope.verify.harness.broker status $(BROKER_ARGS) || test $$? -eq 3  # 3 = not running

.PHONY: kafka-up kafka-down kafka-wipe kafka-status

test-kafka-slow: install ## broker lifecycle tests (restart, CLI, no leaked JVM); not in make test
	$(PY) -m pytest -m "kafka and slow" -q tests/kafka

.PHONY: test-kafka-slow
