# Benchmark setup (bench/, `make bench` in the top-level Makefile runs python -m bench.run).
# Burrow, the existing tool offsetscope's throughput is compared with side by side, comes from
# the distribution's `burrow` package, installed by the benchmark's own setup when absent (the
# package's binary is /usr/bin/Burrow). An install that cannot happen (no apt, no root, no
# network) does not stop `make bench`: the exact error lines are kept in
# .work/bench/burrow/install.log and the Burrow benchmark reports them as its finding.
BURROW_DIR := .work/bench/burrow
# `make bench BENCH_ONLY="decode pipeline" BENCH_SCALE=0.01` reaches bench/run.py's options
export BENCH_ONLY BENCH_SCALE BENCH_PIPELINE_PER_TRIGGER

bench-burrow: ## install Debian's burrow package when absent (errors kept in .work/bench/burrow/install.log)
	@mkdir -p $(BURROW_DIR)
	@if command -v Burrow >/dev/null 2>&1; then \
		echo "burrow: $$(command -v Burrow) already installed" | tee $(BURROW_DIR)/install.log; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "burrow: apt-get is not available on this machine" | tee $(BURROW_DIR)/install.log; \
	else \
		{ apt-get install -y burrow || { apt-get update && apt-get install -y burrow; }; } \
			> $(BURROW_DIR)/install.log 2>&1 \
			&& echo "burrow: installed $$(command -v Burrow)" \
			|| { echo "burrow: install failed (exit $$?), see $(BURROW_DIR)/install.log"; tail -5 $(BURROW_DIR)/install.log; }; \
	fi

# Burrow 1.2.1 needs a ZooKeeper ensemble and a broker writing OffsetCommitValue <= v3: Kafka
# 3.9.1 and its ZooKeeper from bench/jvm/pom.xml, resolved here and never by `make install`.
BENCH_JARS := .work/bench/jars
$(BENCH_JARS)/.resolved: bench/jvm/pom.xml
	mkdir -p $(BENCH_JARS)
	mvn -q -f bench/jvm/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
		-DoutputDirectory=$(abspath $(BENCH_JARS)) && touch $@ \
		|| echo "bench-jars: resolution failed; the Burrow benchmark reports the missing jars"

bench-jars: $(BENCH_JARS)/.resolved ## Kafka 3.9 broker and ZooKeeper jars for the Burrow benchmark

bench: bench-burrow bench-jars

.PHONY: bench-burrow bench-jars
