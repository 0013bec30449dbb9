# The demo and the accuracy check (lib/offsetscope/verify/demo.py, lib/offsetscope/verify/accuracy.py).
# ENV picks conf/<ENV>.toml (default local); CONF adds a further TOML file.
DEMO_ARGS = --env $(or $(ENV),local) $(if $(CONF),--conf $(CONF))
# live-demo: how long it runs, how often it prints the answers, the ingest trigger.
LIVE_SECONDS ?= 120
LIVE_EVERY ?= 30
LIVE_TRIGGER ?= 5s
# accuracy: SCENARIOS="steady transactions" runs only those; ACCURACY_ARGS adds options
# (--real-broker: also real clients on a harness broker, compared with what they observed).
SCENARIOS ?=
ACCURACY_ARGS ?=

demo: install ## bundled coordinator -> segment files -> local Spark -> Delta -> SQL answers (no broker)
	$(PY) -m offsetscope.verify.demo $(DEMO_ARGS)

live-demo: install ## the demo's questions on a real broker with real clients, while the query runs
	$(PY) -m offsetscope.verify.demo live $(DEMO_ARGS) --seconds $(LIVE_SECONDS) --every $(LIVE_EVERY) \
		--trigger "$(LIVE_TRIGGER)"

accuracy: install ## every catalogue scenario through the pipeline, gold tables vs ground truth
	$(PY) -m offsetscope.verify.accuracy $(DEMO_ARGS) $(foreach s,$(SCENARIOS),--scenario $(s)) $(ACCURACY_ARGS)

.PHONY: demo live-demo accuracy
