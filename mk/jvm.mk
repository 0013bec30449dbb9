# JVM jars (deploy/jvm/pom.xml) resolved into build/jvm/{kafka,kafka-tools,spark}.
#
# Stamp-based: Maven runs only when a pom, or the installed pyspark's jar folder (it decides
# what build/jvm/spark must leave out), is newer than the stamp, so a second `make install`
# resolves nothing.
# Each run resolves into empty staging folders (a jar dropped from a pom never lingers), swaps
# them in (tests using build/jvm never see a half-copied folder), and ends with the classpath
# check (no artifact twice, nothing pyspark already has); the stamp is written only if both
# succeed.
JVM_DIR := build/jvm
JVM_STAMP := $(JVM_DIR)/.resolved
JVM_POMS := deploy/jvm/pom.xml $(wildcard deploy/jvm/*/pom.xml)
JVM_MODULES := kafka kafka-tools spark
JVM_STAGING := $(JVM_DIR)/.staging
# Empty in a fresh clone (no venv yet when make reads this); the stamp is missing then anyway.
PYSPARK_JARS := $(wildcard $(VENV)/lib/python3*/site-packages/pyspark/jars)
MVN ?= mvn

$(JVM_STAMP): $(JVM_POMS) $(PYSPARK_JARS) | $(STAMP)
	@command -v $(MVN) >/dev/null || { echo "jvm-jars: Maven ($(MVN)) is not installed" >&2; exit 1; }
	rm -rf $(JVM_STAGING) $(JVM_STAMP)
	$(MVN) -q -B -Dstyle.color=never -Djvm.out=$(CURDIR)/$(JVM_STAGING) -f deploy/jvm/pom.xml package
	for m in $(JVM_MODULES); do rm -rf $(JVM_DIR)/$$m && mv $(JVM_STAGING)/$$m $(JVM_DIR)/$$m; done
	rmdir $(JVM_STAGING)
	$(PY) -m offsetscope.verify.harness.jars check
	@du -sh $(addprefix $(JVM_DIR)/,$(JVM_MODULES))
	touch $@

jvm-jars: $(JVM_STAMP) ## resolve the Kafka, DumpLogSegments and Spark extra jars (Maven)

jvm-clean: ## delete the resolved jars (the next install resolves again)
	rm -rf $(JVM_DIR)

install: jvm-jars

.PHONY: jvm-jars jvm-clean
