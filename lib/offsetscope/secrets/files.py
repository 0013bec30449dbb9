"""The file modes of what offsetscope writes locally.

Only local locations are prepared here (:class:`offsetscope.paths.Location`): a remote file
system (HDFS, an object store) has its own permissions, which offsetscope checks for access at
start (:mod:`offsetscope.spark.storage`) but never changes.

``storage.umask`` bounds the modes of everything written locally: :func:`apply_umask`
sets the process umask (inherited by a JVM started afterwards), :func:`storage_spark_conf`
gives Hadoop's ``fs.permissions.umask-mode`` (Hadoop's local file system chmods what it creates
to that, whatever the process umask), :func:`prepare_storage` creates or tightens the
warehouse, checkpoint and metastore folders, and :func:`permission_violations` lists anything
under a folder that grants more.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from offsetscope import paths
from offsetscope.config import StorageConfig


def umask_of(storage: StorageConfig) -> int:
    """``storage.umask`` as a number (``"027"`` -> ``0o027``)."""
    return int(storage.umask, 8)


def apply_umask(storage: StorageConfig) -> int:
    """Set the process umask to ``storage.umask``; returns the previous one.

    Call it before the SparkSession starts: the JVM inherits the umask at launch.
    """
    return os.umask(umask_of(storage))


def storage_spark_conf(storage: StorageConfig) -> dict[str, str]:
    """Spark settings that apply ``storage.umask`` to what Spark and Delta write."""
    return {"spark.hadoop.fs.permissions.umask-mode": f"{umask_of(storage):03o}"}


def local_folders(storage: StorageConfig) -> list[Path]:
    """The local ones of the warehouse, checkpoint and (Derby) metastore folders, resolved."""
    values = [storage.warehouse_dir, storage.checkpoint_dir]
    if storage.metastore == "derby":
        values.append(storage.metastore_dir)
    locations = [paths.resolve(v) for v in values]
    return [loc.path for loc in locations if loc.is_local]


def prepare_storage(storage: StorageConfig) -> list[Path]:
    """Create the local warehouse, checkpoint and metastore folders with the configured mode,
    and remove any wider permission an existing one has (only on those folders, not inside).
    Remote locations are left alone.

    Returns:
        The local folders, resolved.
    """
    mode = 0o777 & ~umask_of(storage)
    out = []
    for folder in local_folders(storage):
        folder.mkdir(parents=True, exist_ok=True)
        current = stat.S_IMODE(folder.stat().st_mode)
        if current & ~mode:
            folder.chmod(current & mode)
        out.append(folder)
    return out


def permission_violations(root: Path, storage: StorageConfig) -> list[tuple[Path, str]]:
    """Files and folders under ``root`` (and ``root``) granting a bit ``storage.umask`` masks.

    Returns:
        ``(path, mode)`` pairs, mode as ``ls -l`` shows it (``drwxr-xr-x``).
    """
    mask = umask_of(storage)
    out = []
    for path in [root, *sorted(root.rglob("*"))]:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            continue
        if stat.S_IMODE(info.st_mode) & mask:
            out.append((path, stat.filemode(info.st_mode)))
    return out
