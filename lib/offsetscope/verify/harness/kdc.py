"""A Kerberos KDC on loopback for the GSSAPI tests: the ``MiniKdcServer`` launcher.

``deploy/infra/kdc`` builds ``build/jvm/kdc/offsetscope-kdc-launcher-*.jar`` (Hadoop's MiniKdc,
Apache Kerby). It creates the principals asked for (``kafka/localhost`` -> the broker's service
principal, ``client`` -> a user), one keytab per principal (``<work>/kafka_localhost.keytab``,
mode 0600) and a ``krb5.conf`` for clients (TCP only, no DNS lookups, ``localhost`` in the
realm), and reports them in its ready line. Java reads the krb5.conf through
``-Djava.security.krb5.conf``, MIT's tools through ``KRB5_CONFIG``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from offsetscope.verify.harness.jvm import MissingJarsError, java_executable, resolve_path
from offsetscope.verify.harness.launcher import Launcher

JARS_DIR = "build/jvm/kdc"
REALM = "OFFSETSCOPE.LOCAL"


@dataclass
class MiniKdc:
    """A running KDC; :meth:`stop` ends it."""

    launcher: Launcher

    @property
    def realm(self) -> str:
        return str(self.launcher.ready["realm"])

    @property
    def krb5_conf(self) -> Path:
        return Path(self.launcher.ready["krb5_conf"])

    def principal(self, name: str) -> str:
        """``name@REALM``."""
        return name if "@" in name else f"{name}@{self.realm}"

    def keytab(self, name: str) -> Path:
        """The keytab of the principal ``name`` (with or without the realm)."""
        return Path(self.launcher.ready["keytabs"][self.principal(name)])

    def stop(self) -> int | None:
        return self.launcher.stop()


def start(
    work: Path,
    principals: Sequence[str] = ("kafka/localhost", "client"),
    *,
    realm: str = REALM,
    timeout_s: float = 120.0,
    jars_dir: str = JARS_DIR,
) -> MiniKdc:
    """Start a KDC under ``work`` with ``principals`` and wait until ready.

    Raises:
        MissingJarsError: ``make infra-jars`` has not run.
        LauncherError: the KDC did not start.
    """
    found = sorted(resolve_path(jars_dir).glob("offsetscope-kdc-launcher-*.jar"))
    if not found:
        raise MissingJarsError(f"no KDC launcher in {jars_dir}: run `make infra-jars`")
    command = [java_executable(), "-Xmx256m", "-jar", str(found[-1]), "-work", str(work)]
    command += ["-realm", realm, "-exit-on-stdin-close"]
    for name in principals:
        command += ["-principal", name]
    return MiniKdc(Launcher("minikdc", command, work, timeout_s=timeout_s).start())
