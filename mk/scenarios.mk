# The scenario engine (lib/offsetscope/sim/scenarios/): simulated clients on the bundled coordinators.
# SCENARIO names a catalogue entry or a scenario file; OUT is the log directory written;
# SIM_ARGS passes more options (e.g. SIM_ARGS="--seed 7 --param groups=100").
SCENARIO ?= demo
OUT ?= .work/logdir
SIM_ARGS ?=
SCALE_OUT ?= .work/scale

simulate: install ## run SCENARIO (default demo) into OUT (default .work/logdir) + ground truth
	$(PY) -m offsetscope.cli simulate $(SCENARIO) --out $(OUT) --replace $(SIM_ARGS)

scenarios-list: install ## list the catalogue scenarios
	@$(PY) -m offsetscope.cli simulate --list

scale: install ## the scale scenario: 10,000 groups, ~1,000,000 offset commits -> SCALE_OUT (timed)
	$(PY) -m offsetscope.cli simulate scale --out $(SCALE_OUT) --replace $(SIM_ARGS)

fidelity: install ## the fidelity scenarios on a real broker and on the simulator, compared
	$(PY) -m offsetscope.verify.fidelity --env $(or $(ENV),local)

.PHONY: simulate scenarios-list scale fidelity
