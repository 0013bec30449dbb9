# The operator's view (lib/offsetscope/ops/): report pages, views, commands, the exporter.
#
#   make operator-deps     Chromium and Prometheus from the distribution's packages, installed
#                          with apt-get when absent (the tests open a report in headless
#                          Chromium and have Prometheus scrape the exporter). `make test`
#                          depends on it, so a fresh machine gets both by itself.
#   make test-operator     those tests alone (one scenario ingested, then views, commands,
#                          report pages in Chromium, the exporter scraped by Prometheus)
#   make report-screenshot docs/report-screenshot.png, the README's picture: `make demo`,
#                          then its stormiest group's report in headless Chromium
CHROMIUM ?= /usr/bin/chromium
PROMETHEUS ?= /usr/bin/prometheus
OPERATOR_PACKAGES := $(if $(wildcard $(CHROMIUM)),,chromium) $(if $(wildcard $(PROMETHEUS)),,prometheus)
# root installs directly (CI, the project's machines); anyone else through sudo.
APT := $(if $(filter 0,$(shell id -u)),,sudo) apt-get

operator-deps: ## Chromium and Prometheus (apt-get, only when absent) for the operator tests
	@if [ -n "$(strip $(OPERATOR_PACKAGES))" ]; then \
		command -v apt-get >/dev/null || { echo "operator-deps: no apt-get here; install $(strip $(OPERATOR_PACKAGES)) by other means" >&2; exit 1; }; \
		echo "operator-deps: installing $(strip $(OPERATOR_PACKAGES))"; \
		DEBIAN_FRONTEND=noninteractive $(APT) install -y --no-install-recommends $(OPERATOR_PACKAGES) \
			|| { $(APT) update && DEBIAN_FRONTEND=noninteractive $(APT) install -y --no-install-recommends $(OPERATOR_PACKAGES); }; \
	fi
	@test -x $(CHROMIUM) && test -x $(PROMETHEUS) && echo "operator-deps: $(CHROMIUM), $(PROMETHEUS)"

test: operator-deps

test-operator: install operator-deps ## views, commands, report pages in Chromium, exporter scraped by Prometheus
	$(PY) -m pytest -q tests/streaming/test_operator_view.py

report-screenshot: install operator-deps ## docs/report-screenshot.png: make demo, then its stormiest group's report in Chromium
	$(MAKE) demo
	page=$$(ls .work/demo/report-*.html | grep -v report-cluster.html | head -1) && \
		$(PY) -m offsetscope.verify.browser screenshot "$$page" docs/report-screenshot.png

.PHONY: operator-deps test-operator report-screenshot
