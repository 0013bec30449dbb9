# Deployment (deploy/): the wheel, the packed environment YARN ships, and the deployment tests.
#
#   make dist          the wheel in dist/ (the Databricks bundle's artifact: deploy/databricks)
#   make yarn-env      build/yarn/offsetscope-env.tar.gz: a fresh venv with the wheel, the locked
#                      dependencies and delta-spark's Python module, packed with venv-pack
#                      (deploy/yarn/submit.sh ships it), without pyspark and py4j (the wheel's
#                      spark extra is not installed): spark-submit puts the cluster's own
#                      pyspark.zip and py4j zip on every container's PYTHONPATH, and a second
#                      copy would be uploaded with every application for nothing
#   make test-deploy   the bundle against its structure, the Databricks CLI's JSON Schema and the
#                      target modes' rules, the submit script, the packaging (no network, no JVM)
#   make test-cluster  the Spark standalone cluster test (master + worker from the pyspark install)
DIST_DIR := dist
# The wheel needs Python and `build` only: not the project's venv (pyspark, the dev tools) and
# not the JVM jars `make install` resolves with Maven. A deploy host or CI job runs `make dist`
# alone (the Databricks bundle's artifact build), so it gets a venv of its own holding `build`
# as the lock pins it; `build` then makes the wheel in an isolated environment with the
# setuptools and wheel of pyproject.toml's [build-system].
DIST_TOOLS := .work/dist-tools
DIST_STAMP := $(DIST_TOOLS)/.installed
YARN_DIR := build/yarn
YARN_ENV := $(YARN_DIR)/offsetscope-env.tar.gz
VENV_PACK_VERSION := 0.2.0

$(DIST_STAMP): requirements.lock
	rm -rf $(DIST_TOOLS)
	$(PYTHON) -m venv $(DIST_TOOLS)
	$(DIST_TOOLS)/bin/pip install -q --upgrade pip==25.3
	$(DIST_TOOLS)/bin/pip install -q -c requirements.lock build
	touch $@

dist: $(DIST_STAMP) ## build the wheel into dist/ (Python only: no project venv, no Maven, no jars)
	rm -rf $(DIST_DIR)/offsetscope-*.whl
	$(DIST_TOOLS)/bin/python -m build --wheel --outdir $(DIST_DIR) .
	@ls -l $(DIST_DIR)/offsetscope-*.whl

$(YARN_ENV): dist requirements.lock
	rm -rf $(YARN_DIR)/env $(YARN_DIR)/tools $@
	$(PYTHON) -m venv $(YARN_DIR)/env
	$(YARN_DIR)/env/bin/pip install -q --upgrade pip==25.3
	$(YARN_DIR)/env/bin/pip install -q -c requirements.lock $(DIST_DIR)/offsetscope-*.whl
	$(YARN_DIR)/env/bin/pip install -q -c requirements.lock --no-deps delta-spark
	$(PYTHON) -m venv $(YARN_DIR)/tools
	$(YARN_DIR)/tools/bin/pip install -q venv-pack==$(VENV_PACK_VERSION)
	$(YARN_DIR)/tools/bin/venv-pack -p $(YARN_DIR)/env -o $@
	@ls -l $@

yarn-env: $(YARN_ENV) ## pack the job environment for YARN (deploy/yarn/submit.sh --archive)

test-deploy: install ## the bundle (structure, the CLI's JSON Schema, target modes), the YARN script, packaging
	$(PY) -m pytest -q tests/unit/test_deploy_bundle.py tests/unit/test_deploy_bundle_schema.py \
		tests/unit/test_deploy_yarn.py tests/unit/test_packaging.py

test-cluster: install ## the ingest job submitted to a Spark standalone cluster on loopback
	$(PY) -m pytest -q tests/cluster

.PHONY: dist yarn-env test-deploy test-cluster
