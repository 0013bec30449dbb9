# Integration infrastructure: real HDFS + YARN, an S3 API server, a Kerberos KDC, and Spark's
# S3A jars, resolved from deploy/infra/pom.xml into build/jvm/{hadoop,kdc,s3proxy,s3a}.
#
# NOT part of `make install` (about 170 MB, and only the slow integration targets need them):
#
#   make infra-jars    resolve + compile the launchers (stamp-based: Maven runs only when a pom,
#                      a launcher source or pyspark's jar folder is newer than the stamp)
#   make infra-clean   delete those four folders (build/jvm's other folders stay)
#
# Like mk/jvm.mk: resolution goes into an empty staging folder, each module's folder is swapped
# in whole, then deploy/infra/check_jars.py checks build/jvm/s3a against pyspark's jars and
# build/jvm/spark (it goes on Spark's classpath) and each own-JVM folder for duplicate classes;
# the stamp is written only if all of that succeeds.
#
# This file is read before mk/jvm.mk (include order), so it defines its own variables.
INFRA_JVM_DIR := build/jvm
INFRA_MODULES := hadoop kdc s3proxy s3a
INFRA_STAMP := $(INFRA_JVM_DIR)/.infra-resolved
INFRA_STAGING := $(INFRA_JVM_DIR)/.staging-infra
INFRA_INPUTS := $(shell find deploy/infra -type f \( -name pom.xml -o -name '*.java' -o -name '*.properties' -o -name '*.xml' \) 2>/dev/null)
INFRA_PYSPARK_JARS := $(wildcard $(VENV)/lib/python3*/site-packages/pyspark/jars)
MVN ?= mvn

$(INFRA_STAMP): $(INFRA_INPUTS) deploy/infra/check_jars.py $(INFRA_PYSPARK_JARS) | $(STAMP)
	@command -v $(MVN) >/dev/null || { echo "infra-jars: Maven ($(MVN)) is not installed" >&2; exit 1; }
	rm -rf $(INFRA_STAGING) $(INFRA_STAMP)
	$(MVN) -q -B -Dstyle.color=never -Djvm.out=$(CURDIR)/$(INFRA_STAGING) -f deploy/infra/pom.xml package
	for m in $(INFRA_MODULES); do rm -rf $(INFRA_JVM_DIR)/$$m && mv $(INFRA_STAGING)/$$m $(INFRA_JVM_DIR)/$$m; done
	rmdir $(INFRA_STAGING)
	$(PY) deploy/infra/check_jars.py $(INFRA_JVM_DIR)
	@du -sh $(addprefix $(INFRA_JVM_DIR)/,$(INFRA_MODULES))
	touch $@

infra-jars: $(INFRA_STAMP) ## resolve HDFS/YARN, KDC, S3Proxy and S3A jars (integration only; not in install)

infra-clean: ## delete the integration jars (build/jvm/{hadoop,kdc,s3proxy,s3a})
	rm -rf $(addprefix $(INFRA_JVM_DIR)/,$(INFRA_MODULES)) $(INFRA_STAMP) $(INFRA_STAGING) build/infra-target

.PHONY: infra-jars infra-clean

# Kerberos client side for librdkafka (confluent-kafka) GSSAPI tests only; the Java clients
# (broker, Spark's Kafka source, MiniKdc) need nothing native. The confluent-kafka wheels on
# PyPI are built without Cyrus SASL ("No provider for SASL mechanism GSSAPI"); Debian's
# librdkafka has it (builtin.features ... sasl_gssapi), runs `kinit` from krb5-user to log in from
# a keytab, and needs the GSSAPI plugin of Cyrus SASL. librdkafka-dev is for building
# confluent-kafka from its sdist against that librdkafka; kcat is a ready-made CLI client.
INFRA_APT_PACKAGES := krb5-user libsasl2-modules-gssapi-mit librdkafka-dev kcat

infra-krb5-client: ## apt-get the Kerberos client + Cyrus SASL GSSAPI + Debian librdkafka (root; GSSAPI via librdkafka only)
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(INFRA_APT_PACKAGES)

.PHONY: infra-krb5-client

# The slow checks against those components (tests/remote/; never part of `make test`). Each
# prints its outcome line at the end: `s3: N tables checked, M differ`, `yarn: ...`,
# `kerberos: ...`.
REMOTE_PYTEST = $(PY) -m pytest -q -p no:randomly -m slow

test-s3: install infra-jars ## jobs on S3Proxy (s3a://) vs a local run, bad buckets/keys at start (several minutes)
	$(REMOTE_PYTEST) tests/remote/test_s3.py

.PHONY: test-s3

# The packed environment is a prerequisite by file, not by target: `make yarn-env` rebuilds the
# wheel and the archive every time (minutes), so run it once after changing the package.
test-yarn: install infra-jars ## ingest + alerts via submit.sh on MiniHadoop's YARN (client, cluster), tables on HDFS vs a local run
	@test -f $(YARN_ENV) || { echo "test-yarn: no $(YARN_ENV): run make yarn-env first" >&2; exit 1; }
	$(REMOTE_PYTEST) tests/remote/test_yarn.py

.PHONY: test-yarn

test-kerberos: install infra-jars msk-iam-jars ## a KDC, a GSSAPI-only broker, the ingest job reading __consumer_offsets through GSSAPI; MSK IAM's login module loads
	$(REMOTE_PYTEST) tests/remote/test_kerberos.py tests/remote/test_msk_iam.py

.PHONY: test-kerberos

# The AWS MSK IAM login module for Spark's Kafka source (deploy/msk-iam/pom.xml), used with
# build/jvm/s3a's AWS SDK. Optional, like S3A: only for sasl_mechanism = "AWS_MSK_IAM" on a
# platform that lacks it.
MSK_IAM_STAMP := $(INFRA_JVM_DIR)/.msk-iam-resolved

$(MSK_IAM_STAMP): deploy/msk-iam/pom.xml | $(STAMP)
	@command -v $(MVN) >/dev/null || { echo "msk-iam-jars: Maven ($(MVN)) is not installed" >&2; exit 1; }
	rm -rf $(INFRA_JVM_DIR)/msk-iam $@
	$(MVN) -q -B -Dstyle.color=never -f deploy/msk-iam/pom.xml package
	@ls $(INFRA_JVM_DIR)/msk-iam
	touch $@

msk-iam-jars: $(MSK_IAM_STAMP) ## resolve the AWS MSK IAM login module (build/jvm/msk-iam; with build/jvm/s3a)

.PHONY: msk-iam-jars
