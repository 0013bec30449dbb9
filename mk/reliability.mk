# Reliability (docs/reliability.md): hostile input through the pipeline, fuzzing, crash trials.
CORPUS_RECORDS ?= 100000
CORPUS_SEED ?= 1
CORPUS_OUT ?= .work/corpus

corpus: install ## CORPUS_RECORDS hostile records through the ingest pipeline; accounting + peak RSS
	rm -rf $(CORPUS_OUT) $(CORPUS_OUT)-pipeline
	$(PY) -m offsetscope.verify.corpus --records $(CORPUS_RECORDS) --seed $(CORPUS_SEED) --out $(CORPUS_OUT) --ingest

.PHONY: corpus

FUZZ_SECONDS ?= 300
FUZZ_ROUND ?= 500
# Address space of the fuzzing process (KiB): an unbounded allocation fails as MemoryError.
FUZZ_MEMORY_KB ?= 6000000

fuzz: install ## hypothesis at scale on the protocol layer for FUZZ_SECONDS (decoders, batch reader, fast-path parity)
	ulimit -v $(FUZZ_MEMORY_KB) && FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_ROUND=$(FUZZ_ROUND) \
		$(PY) -m pytest tests/fuzz -m slow -q -s -p no:randomly

.PHONY: fuzz

CHAOS_TRIALS ?= 50
CHAOS_SEED ?= 1
CHAOS_KILLS_PER_CHAIN ?= 5
CHAOS_OUT ?= .work/chaos

chaos: install ## SIGKILL the ingest driver CHAOS_TRIALS times (timed, after a Delta commit, inside one, after a batch's audit row), restart, compare every table
	$(PY) -m offsetscope.verify.chaos --trials $(CHAOS_TRIALS) --kills-per-chain $(CHAOS_KILLS_PER_CHAIN) --seed $(CHAOS_SEED) --out $(CHAOS_OUT)

.PHONY: chaos
