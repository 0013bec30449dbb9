"""AWS MSK IAM: the settings offsetscope maps ``sasl_mechanism = "AWS_MSK_IAM"`` to, given to
Kafka's Java client with the login module of ``make msk-iam-jars`` on the classpath Spark gets.

No MSK endpoint is reachable from here, so this proves what can be proved locally: Kafka's
client accepts the mapping -- it loads ``IAMLoginModule`` from ``sasl.jaas.config`` and
``IAMClientCallbackHandler`` and logs in -- when an AdminClient is created against an address
that refuses connections (the signed handshake, where credentials are fetched, never starts).
``make test-kerberos`` runs it with the other authentication check.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pyspark.find_spark_home import _find_spark_home

from offsetscope.config import KafkaSecurityConfig
from offsetscope.secrets import kafka as secrets_kafka
from offsetscope.secrets.references import Resolver
from offsetscope.verify.harness.jvm import java_executable, resolve_path

pytestmark = [pytest.mark.slow, pytest.mark.jvm]


def test_kafka_java_client_accepts_the_msk_iam_mapping(tmp_path: Path) -> None:
    sec = KafkaSecurityConfig(
        protocol="SASL_SSL", sasl_mechanism="AWS_MSK_IAM", msk_iam_profile="offsetscope"
    )
    settings = secrets_kafka.security_settings(sec, Resolver(environ={})).java
    lines = ["var p = new java.util.Properties();", 'p.put("bootstrap.servers", "127.0.0.1:1");']
    lines += [f"p.put({_java(k)}, {_java(v)});" for k, v in settings.items()]
    lines += [
        "var admin = org.apache.kafka.clients.admin.AdminClient.create(p);",
        'System.out.println("created " + admin.getClass().getName());',
        "admin.close(java.time.Duration.ofSeconds(1));",
        "/exit",
    ]
    script = tmp_path / "msk.jsh"
    script.write_text("\n".join(lines) + "\n")
    folders = [
        resolve_path("build/jvm/spark"),
        resolve_path("build/jvm/s3a"),
        resolve_path("build/jvm/msk-iam"),
        Path(_find_spark_home()) / "jars",
    ]
    jars = [str(j) for folder in folders for j in sorted(folder.glob("*.jar"))]
    assert any("aws-msk-iam-auth" in j for j in jars), "make msk-iam-jars"
    jshell = str(Path(java_executable()).with_name("jshell"))
    env = {**os.environ, "AWS_EC2_METADATA_DISABLED": "true"}
    done = subprocess.run(
        [jshell, "--class-path", ":".join(jars), str(script)],
        capture_output=True, text=True, timeout=600, env=env, check=False,
    )  # fmt: skip
    assert "created org.apache.kafka.clients.admin.KafkaAdminClient" in done.stdout, (
        done.stdout[-3000:] + done.stderr[-3000:]
    )


def _java(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
