"""Storage locations in ``conf/``: a URI or a local path, resolved one way, in one place.

Every folder setting of ``conf/`` -- ``[storage] warehouse_dir``, ``checkpoint_dir``,
``metastore_dir``, ``[sources.segments] log_dir`` and ``data_log_dir`` -- is a
:class:`Location`:

* a **URI** with a scheme -- ``hdfs://nn:8020/x``, ``hdfs:///x`` (the cluster's
  ``fs.defaultFS``), ``s3a://bucket/x``, ``abfss://container@account.dfs.core.windows.net/x``,
  ``gs://bucket/x``, ``dbfs:/x`` -- is kept exactly as written and handed to Spark and Hadoop,
  which own those file systems;
* ``file:/x`` and ``file:///x`` are the local path ``/x``;
* an **absolute local path** (``/data/x``, Unity Catalog's ``/Volumes/...``) stays as it is,
  ``~`` expanded;
* a **relative local path** is relative to the project root, :func:`offsetscope.config.project_root`:
  the folder that holds the ``conf/`` folder in use (``OFFSETSCOPE_CONF_DIR``'s parent when that
  is set), or the working directory when the configuration is the wheel's own copy. Never the
  working directory of whoever started the process.

Only local locations get local preparation (the umask, folder modes: :mod:`offsetscope.secrets.files`);
remote ones are checked for access when a job starts (:mod:`offsetscope.spark.storage`).

The segment source and the segment end-offset sampler read a log directory from Python (Spark's
Python workers have no Hadoop client), so :func:`readable` gives a pathlib-like object for any
location: :class:`pathlib.Path` for a local one, :class:`RemotePath` over a ``pyarrow.fs``
file system for a URI (S3 for ``s3a://``/``s3://``, GCS for ``gs://``, Azure for
``abfs[s]://``, HDFS through libhdfs for ``hdfs://``; ``dbfs:/x`` is Databricks' FUSE mount
``/dbfs/x``). The S3 endpoint and addressing style come from the same ``spark.hadoop.fs.s3a.*``
settings S3A reads (:func:`python_fs_options`); credentials from the AWS SDK's default chain
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, a profile, an instance role), which S3A's
default provider chain reads too, so ``conf/`` never holds a key.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final
from urllib.parse import urlsplit

from offsetscope.config import project_root

# "<scheme>:" with a scheme of two or more characters (a single letter would be a Windows drive).
_URI: Final = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]+):(?P<rest>.*)$")
# Schemes whose objects are local files.
LOCAL_SCHEMES: Final = frozenset({"file"})
# Object stores: no real folders, no permissions to prepare, one writer per Delta table unless
# a multi-writer log store is configured (docs/design.md, "Real components").
OBJECT_STORE_SCHEMES: Final = frozenset(
    {"s3a", "s3", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs"}
)
# The spark.hadoop.fs.s3a.* settings the Python reader takes over (see python_fs_options).
_S3A_KEYS: Final = (
    "fs.s3a.endpoint",
    "fs.s3a.endpoint.region",
    "fs.s3a.path.style.access",
    "fs.s3a.connection.ssl.enabled",
)


class InvalidLocationError(ValueError):
    """A location setting cannot be used; the message names the key."""

    def __init__(self, key_path: str, message: str) -> None:
        super().__init__(f"{key_path}: {message}" if key_path else message)
        self.key_path = key_path


@dataclass(frozen=True, slots=True)
class Location:
    """A resolved storage location: an absolute local path, or a URI exactly as written.

    ``str(location)`` is what Spark, Delta and Hadoop get.
    """

    text: str
    scheme: str = ""  # "" for a local path; lower case otherwise

    @property
    def is_local(self) -> bool:
        return not self.scheme

    @property
    def is_object_store(self) -> bool:
        return self.scheme in OBJECT_STORE_SCHEMES

    @property
    def path(self) -> Path:
        """The local path (only for a local location).

        Raises:
            ValueError: the location is remote.
        """
        if not self.is_local:
            raise ValueError(f"{self.text} is not a local path")
        return Path(self.text)

    def join(self, *parts: str) -> Location:
        """``self/part/...``; a URI keeps its scheme and authority (``hdfs:///x`` stays
        ``hdfs:///x/part``, where ``pathlib`` would fold it to ``hdfs:/x/part``)."""
        if self.is_local:
            return Location(str(Path(self.text, *parts)))
        text = self.text.rstrip("/")
        if text.endswith(":"):  # "dbfs:" / a bare scheme: keep the root
            text += "/"
        for part in parts:
            text = f"{text.rstrip('/')}/{part.strip('/')}"
        return Location(text, self.scheme)

    def __str__(self) -> str:
        return self.text


def scheme_of(value: str) -> str:
    """The URI scheme of ``value`` in lower case, or "" for a path."""
    match = _URI.match(value)
    return match.group("scheme").lower() if match else ""


def resolve(value: str | os.PathLike[str], root: Path | None = None) -> Location:
    """``value`` from ``conf/`` as a :class:`Location` (see the module docstring).

    Args:
        value: the setting's text.
        root: the folder relative paths are relative to (default: the project root).
    """
    text = os.fspath(value)
    scheme = scheme_of(text)
    if scheme in LOCAL_SCHEMES:
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            return Location(text, scheme)  # file://host/...: not this machine's
        text = parts.path or "/"
        scheme = ""
    if scheme:
        return Location(text, scheme)
    candidate = Path(text).expanduser()
    if not candidate.is_absolute():
        candidate = (root if root is not None else project_root()) / candidate
    return Location(str(candidate))


def resolve_path(value: str | os.PathLike[str]) -> str:
    """:func:`resolve` as text: what Spark and Hadoop are given."""
    return str(resolve(value))


def local_path(value: str | os.PathLike[str], key_path: str = "") -> Path:
    """A setting that must be local (the embedded metastore, a jar folder) as a path.

    Raises:
        InvalidLocationError: ``value`` is a remote URI.
    """
    location = resolve(value)
    if not location.is_local:
        raise InvalidLocationError(
            key_path, f"must be a local path, not a {location.scheme}:// URI ({location})"
        )
    return location.path


# ----------------------------------------------------------------------------- Python access


def python_fs_options(spark_conf: Mapping[str, str]) -> dict[str, str]:
    """The S3A settings of ``spark_conf`` (``spark.hadoop.fs.s3a.endpoint`` ...) the Python
    reader applies too, keyed without the ``spark.hadoop.`` prefix."""
    out = {}
    for key in _S3A_KEYS:
        value = spark_conf.get(f"spark.hadoop.{key}")
        if value is not None:
            out[key] = value
    return out


_OPTIONS: dict[str, str] = {}
_LOCK = threading.Lock()


def configure(options: Mapping[str, str]) -> None:
    """Set the options (:func:`python_fs_options`) of file systems created from now on in this
    process; Spark's Python workers call it with the options the source was given."""
    with _LOCK:
        if dict(options) != _OPTIONS:
            _OPTIONS.clear()
            _OPTIONS.update(options)
            _filesystem.cache_clear()


def _true(text: str | None, default: bool) -> bool:
    return default if text is None else text.strip().lower() == "true"


@functools.lru_cache(maxsize=16)
def _filesystem(scheme: str, authority: str) -> Any:
    """A ``pyarrow.fs`` file system for ``scheme://authority`` (cached per process)."""
    import pyarrow.fs as pafs

    if scheme in ("s3a", "s3", "s3n"):
        kwargs: dict[str, Any] = {}
        endpoint = _OPTIONS.get("fs.s3a.endpoint")
        if endpoint:
            parts = urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
            kwargs["endpoint_override"] = parts.netloc
            https = _true(_OPTIONS.get("fs.s3a.connection.ssl.enabled"), True)
            kwargs["scheme"] = parts.scheme or ("https" if https else "http")
        region = _OPTIONS.get("fs.s3a.endpoint.region")
        if region:
            kwargs["region"] = region
        if endpoint and _true(_OPTIONS.get("fs.s3a.path.style.access"), False):
            kwargs["force_virtual_addressing"] = False
        return pafs.S3FileSystem(**kwargs)
    if scheme == "gs":
        return pafs.GcsFileSystem()
    if scheme in ("abfs", "abfss"):
        # container@account.dfs.core.windows.net
        account = authority.split("@", 1)[-1].split(".", 1)[0]
        return pafs.AzureFileSystem(account_name=account)
    if scheme == "hdfs":
        host, _, port = authority.partition(":")
        # "default": the name node of fs.defaultFS in the Hadoop configuration libhdfs reads.
        return pafs.HadoopFileSystem(host or "default", int(port) if port else 0)
    raise InvalidLocationError("", f"Python cannot read {scheme}:// locations")


def _split(location: Location) -> tuple[Any, str]:
    """(file system, path inside it) of a remote location."""
    parts = urlsplit(location.text)
    scheme = location.scheme
    if scheme in ("abfs", "abfss"):
        container = parts.netloc.split("@", 1)[0]
        path = f"{container}/{parts.path.lstrip('/')}"
    elif scheme == "hdfs":
        path = parts.path or "/"
    else:  # s3a://bucket/key, gs://bucket/key
        path = f"{parts.netloc}/{parts.path.lstrip('/')}"
    return _filesystem(scheme, parts.netloc), path.rstrip("/") or "/"


class RemotePath:
    """The part of :class:`pathlib.Path` the log readers use, over a ``pyarrow.fs`` file system.

    ``str()`` is the URI; :meth:`open` returns a random-access binary file (``seek``, ``read``).
    """

    __slots__ = ("_fs", "_path", "_type", "uri")

    def __init__(
        self, uri: str, fs: Any = None, path: str | None = None, file_type: Any = None
    ) -> None:
        self.uri = uri.rstrip("/") if not uri.endswith(":/") else uri
        if fs is None or path is None:
            fs, path = _split(Location(uri, scheme_of(uri)))
        self._fs = fs
        self._path = path
        # Known from the listing that found this entry: a request per entry saved.
        self._type = file_type

    @property
    def name(self) -> str:
        return self._path.rsplit("/", 1)[-1]

    def __truediv__(self, part: str) -> RemotePath:
        return RemotePath(f"{self.uri}/{part}", self._fs, f"{self._path}/{part}")

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"RemotePath({self.uri!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and other.uri == self.uri

    def __hash__(self) -> int:
        return hash(self.uri)

    def _kind(self) -> Any:
        if self._type is None:
            return self._fs.get_file_info(self._path).type
        return self._type

    def exists(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self._kind() != pafs.FileType.NotFound)

    def is_dir(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self._kind() == pafs.FileType.Directory)

    def is_file(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self._kind() == pafs.FileType.File)

    def iterdir(self) -> Iterator[RemotePath]:
        import pyarrow.fs as pafs

        for info in self._fs.get_file_info(pafs.FileSelector(self._path)):
            yield RemotePath(
                f"{self.uri}/{info.base_name}",
                self._fs,
                f"{self._path}/{info.base_name}",
                info.type,
            )

    def open(self, mode: str = "rb") -> IO[bytes]:
        if mode != "rb":
            raise ValueError(f"{self.uri}: remote log files are read only ('rb'), not {mode!r}")
        handle: IO[bytes] = self._fs.open_input_file(self._path)
        return handle

    def read_bytes(self) -> bytes:
        with self.open() as handle:
            return handle.read()


def readable(value: str | os.PathLike[str] | RemotePath) -> Path | RemotePath:
    """A file or folder to read from Python: a :class:`RemotePath` for a URI (``dbfs:/x`` is
    the FUSE path ``/dbfs/x``), else a :class:`~pathlib.Path` as given (a relative one is the
    caller's: settings from ``conf/`` are resolved by :func:`resolve` before they get here)."""
    if isinstance(value, RemotePath | Path):
        return value
    text = os.fspath(value)
    scheme = scheme_of(text)
    if not scheme:
        return Path(text)
    location = resolve(text)
    if location.is_local:
        return location.path
    if location.scheme == "dbfs":
        return Path("/dbfs") / urlsplit(location.text).path.lstrip("/")
    return RemotePath(location.text)


def file_size(handle: IO[bytes]) -> int:
    """The size of an open binary file, local or remote (seeks to the end and back)."""
    here = handle.tell()
    size = handle.seek(0, os.SEEK_END)
    handle.seek(here)
    return int(size)


# ----------------------------------------------------------------------------- access errors

# What a file system's own error means, for the first words of the message (the error itself
# follows): matched against the whole cause chain's text.
_CAUSES: Final = (
    (re.compile(r"ConnectException|Connection refused|UnknownHostException|NoRouteToHost"),
     "cannot reach the file system's server"),
    (re.compile(r"NoSuchBucket|UnknownStoreException|bucket does not exist", re.IGNORECASE),
     "the bucket does not exist"),
    (re.compile(r"AccessControlException|AccessDenied|Permission denied|Forbidden|\b403\b"),
     "no access"),
    (re.compile(r"libhdfs|JAVA_HOME|HadoopFileSystem", re.IGNORECASE),
     "Python cannot open HDFS here"),
)  # fmt: skip


class StorageAccessError(PermissionError):
    """A location in ``conf/`` cannot be reached, read or written; raised when a job starts.

    The message is ``<key> = <location>: cannot <operation> (<meaning>): <the cause's first
    line>``.

    Attributes:
        key_path: the dotted key (``storage.checkpoint_dir``).
        location: the resolved location.
        cause: the file system's own first line (Hadoop's or pyarrow's exception text).
    """

    def __init__(self, key_path: str, location: str, operation: str, cause: str) -> None:
        meaning = next((text for pattern, text in _CAUSES if pattern.search(cause)), "")
        first = next((line.strip() for line in cause.splitlines() if line.strip()), "")
        where = f" ({meaning})" if meaning else ""
        super().__init__(f"{key_path} = {location}: cannot {operation}{where}: {first[:600]}")
        self.key_path = key_path
        self.location = location
        self.cause = first


def check_readable(key_path: str, value: str) -> Location:
    """Check from Python that a remote folder to read (a log directory) is there and listable.

    Local folders are not checked (a missing local log directory reads as empty, as before).

    Raises:
        StorageAccessError: the folder cannot be listed, or is not a folder.
    """
    location = resolve(value)
    if location.is_local:
        return location
    try:
        folder = readable(location.text)
        if not folder.is_dir():
            raise StorageAccessError(key_path, location.text, "read it", "no such folder")
        next(iter(folder.iterdir()), None)
    except StorageAccessError:
        raise
    # pyarrow raises OSError and ArrowException subclasses, with the store's answer in the text.
    except Exception as exc:  # noqa: BLE001
        raise StorageAccessError(
            key_path, location.text, "read it", f"{type(exc).__name__}: {exc}"
        ) from None
    return location
