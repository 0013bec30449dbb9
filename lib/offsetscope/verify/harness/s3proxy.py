"""An S3 API server on loopback for the object-store tests: S3Proxy from ``make infra-jars``.

S3Proxy (``build/jvm/s3proxy``, its own JVM) with jclouds' ``filesystem`` backend: each
sub-folder of ``<work>/blobs`` is a bucket (:meth:`S3Proxy.create_bucket` makes one), and it
signs requests with a static key pair generated per start (AWS signature v2 or v4). It prints
no ready line; ready is when its port accepts connections.

Clients get the key pair through the AWS SDKs' standard variables (:meth:`S3Proxy.client_env`:
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``), which both S3A's default credential chain
and pyarrow's S3 file system read, so no configuration file holds them; :meth:`S3Proxy.s3a_conf`
gives the endpoint settings (path-style addressing, plain HTTP).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

from offsetscope.verify.harness.jvm import (
    MissingJarsError,
    java_executable,
    project_root,
    resolve_path,
)
from offsetscope.verify.harness.launcher import LauncherError, _tie_to_parent, free_port, tail

JARS_DIR = "build/jvm/s3proxy"
REGION = "us-east-1"


class S3Proxy:
    """One S3Proxy process; use :func:`start`."""

    def __init__(self, work: Path, port: int, process: subprocess.Popen[bytes]) -> None:
        self.work = work
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}"
        self.process = process
        self.access_key = ""
        self.secret_key = ""

    @property
    def blobs(self) -> Path:
        return self.work / "blobs"

    @property
    def log_file(self) -> Path:
        return self.work / "s3proxy.log"

    def create_bucket(self, name: str) -> str:
        """A new empty bucket (a folder of the filesystem backend); its ``s3a://`` URI."""
        (self.blobs / name).mkdir(parents=True, exist_ok=True)
        return f"s3a://{name}"

    def s3a_conf(self) -> dict[str, str]:
        """Spark settings for S3A against this server (credentials: :meth:`client_env`)."""
        return {
            "spark.hadoop.fs.s3a.endpoint": self.endpoint,
            "spark.hadoop.fs.s3a.endpoint.region": REGION,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            # The key pair from the environment only: S3A's default chain would go on to the
            # EC2 instance metadata address, which is not this machine's.
            "spark.hadoop.fs.s3a.aws.credentials.provider": (
                "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider"
            ),
        }

    def client_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env["AWS_ACCESS_KEY_ID"] = self.access_key
        env["AWS_SECRET_ACCESS_KEY"] = self.secret_key
        env["AWS_REGION"] = REGION
        # pyarrow's S3 client must not ask the EC2 metadata address either.
        env["AWS_EC2_METADATA_DISABLED"] = "true"
        return env

    def stop(self, timeout_s: float = 30.0) -> int | None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        return self.process.returncode

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def start(work: Path, *, timeout_s: float = 120.0, jars_dir: str = JARS_DIR) -> S3Proxy:
    """Start S3Proxy under ``work`` on a free loopback port and wait until it listens.

    Raises:
        MissingJarsError: ``make infra-jars`` has not run.
        LauncherError: it exited or did not listen in time (then it is stopped).
    """
    folder = resolve_path(jars_dir)
    if not any(folder.glob("s3proxy-*.jar")):
        raise MissingJarsError(f"no S3Proxy in {jars_dir}: run `make infra-jars`")
    work.mkdir(parents=True, exist_ok=True)
    (work / "blobs").mkdir(exist_ok=True)
    port = free_port()
    access, secret = f"offsetscope-{secrets.token_hex(4)}", secrets.token_urlsafe(24)
    properties = work / "s3proxy.conf"
    properties.write_text(
        "\n".join(
            [
                f"s3proxy.endpoint=http://127.0.0.1:{port}",
                "s3proxy.authorization=aws-v2-or-v4",
                f"s3proxy.identity={access}",
                f"s3proxy.credential={secret}",
                "jclouds.provider=filesystem",
                f"jclouds.filesystem.basedir={work / 'blobs'}",
                # The filesystem backend ignores its own keys, but S3Proxy insists on them.
                "jclouds.identity=unused",
                "jclouds.credential=unused",
            ]
        )
        + "\n"
    )
    properties.chmod(0o600)
    logback = project_root() / "deploy" / "infra" / "s3proxy" / "logback.xml"
    command = [
        java_executable(),
        "-Xmx256m",
        f"-Dlogback.configurationFile={logback}",
        "-cp",
        f"{folder}/*",
        "org.gaul.s3proxy.Main",
        "--properties",
        str(properties),
    ]
    with (work / "s3proxy.log").open("wb") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=work,
            preexec_fn=_tie_to_parent,  # noqa: PLW1509
        )
    server = S3Proxy(work, port, process)
    server.access_key, server.secret_key = access, secret
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LauncherError(f"s3proxy exited ({process.returncode})\n{tail(server.log_file)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return server
        time.sleep(0.1)
    server.stop()
    raise LauncherError(f"s3proxy: not listening after {timeout_s:.0f} s\n{tail(server.log_file)}")
