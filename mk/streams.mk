# Kafka Streams of the broker's version (deploy/jvm/kafka-streams/pom.xml) in
# build/jvm/kafka-streams/: the real Streams application of offsetscope.verify.harness.streams,
# compiled with javac at test time and run on the streams rebalance protocol against the
# harness broker (tests/kafka/test_share_streams_real_broker.py, and `make accuracy
# ACCURACY_ARGS=--real-broker`). Not resolved by `make install`; `make test` resolves it.
STREAMS_JARS := $(JVM_DIR)/kafka-streams
STREAMS_STAMP := $(STREAMS_JARS)/.resolved
STREAMS_STAGING := $(JVM_DIR)/.staging-streams

$(STREAMS_STAMP): deploy/jvm/kafka-streams/pom.xml deploy/jvm/pom.xml | $(STAMP)
	@command -v $(MVN) >/dev/null || { echo "streams-jars: Maven ($(MVN)) is not installed" >&2; exit 1; }
	rm -rf $(STREAMS_STAGING)
	$(MVN) -q -B -Dstyle.color=never -Djvm.out=$(CURDIR)/$(STREAMS_STAGING) -f deploy/jvm/kafka-streams/pom.xml package
	rm -rf $(STREAMS_JARS) && mv $(STREAMS_STAGING)/kafka-streams $(STREAMS_JARS)
	rmdir $(STREAMS_STAGING)
	touch $@

streams-jars: $(STREAMS_STAMP) ## Kafka Streams jars (the broker's version) for the real Streams app

test-share-streams: install streams-jars ## share and Streams groups on the real broker vs what the clients saw
	$(PY) -m pytest -q tests/kafka/test_share_streams_real_broker.py

test: streams-jars
accuracy: streams-jars

.PHONY: streams-jars test-share-streams
