# Deployment (deploy/): the wheel, the packed environment YARN ships, and the deployment tests.
#
#   make dist          the wheel in dist/ (the Databricks bundle's artifact: deploy/databricks)
#   make yarn-env      build/yarn/offsetscope-env.tar.gz: a fresh venv with the wheel and the
#                      locked dependencies, packed with venv-pack (deploy/yarn/submit.sh ships it),
#                      without pyspark and py4j: spark-submit puts the cluster's own pyspark.zip
#                      and py4j zip on every container's PYTHONPATH, and a second copy would be
#                      uploaded with every application for nothing
#   make test-deploy   the bundle's and the submit script's structural tests (no network, no JVM)
#   make test-cluster  the Spark standalone cluster test (master + worker from the pyspark install)
DIST_DIR := dist
YARN_DIR := build/yarn
YARN_ENV := $(YARN_DIR)/offsetscope-env.tar.gz
VENV_PACK_VERSION := 0.2.0

dist: install ## build the wheel into dist/ (isolated build: setuptools and wheel as pinned in pyproject)
	rm -rf $(DIST_DIR)/offsetscope-*.whl
	$(PY) -m build --wheel --outdir $(DIST_DIR) .
	@ls -l $(DIST_DIR)/offsetscope-*.whl

$(YARN_ENV): dist requirements.lock
	rm -rf $(YARN_DIR)/env $(YARN_DIR)/tools $@
	$(PYTHON) -m venv $(YARN_DIR)/env
	$(YARN_DIR)/env/bin/pip install -q --upgrade pip==25.3
	$(YARN_DIR)/env/bin/pip install -q -c requirements.lock $(DIST_DIR)/offsetscope-*.whl
	$(YARN_DIR)/env/bin/pip uninstall -q -y pyspark py4j
	$(PYTHON) -m venv $(YARN_DIR)/tools
	$(YARN_DIR)/tools/bin/pip install -q venv-pack==$(VENV_PACK_VERSION)
	$(YARN_DIR)/tools/bin/venv-pack -p $(YARN_DIR)/env -o $@
	@ls -l $@

yarn-env: $(YARN_ENV) ## pack the job environment for YARN (deploy/yarn/submit.sh --archive)

test-deploy: install ## structural tests of the Databricks bundle and the YARN submit script
	$(PY) -m pytest -q tests/unit/test_deploy_bundle.py tests/unit/test_deploy_yarn.py

test-cluster: install ## the ingest job submitted to a Spark standalone cluster on loopback
	$(PY) -m pytest -q tests/cluster

.PHONY: dist yarn-env test-deploy test-cluster
