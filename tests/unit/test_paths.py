"""Locations in conf/: URIs kept as written, local paths resolved one way, errors naming the key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from offsetscope import config, paths
from offsetscope.paths import Location, RemotePath, StorageAccessError
from offsetscope.secrets import files as secrets_files

ROOT = Path("/srv/offsetscope")


@pytest.mark.parametrize(
    ("value", "text", "scheme"),
    [
        ("hdfs:///user/x/ck", "hdfs:///user/x/ck", "hdfs"),
        ("hdfs://nn:8020/user/x/ck", "hdfs://nn:8020/user/x/ck", "hdfs"),
        ("s3a://bucket/tables", "s3a://bucket/tables", "s3a"),
        (
            "abfss://data@acct.dfs.core.windows.net/offsetscope",
            "abfss://data@acct.dfs.core.windows.net/offsetscope",
            "abfss",
        ),
        ("gs://bucket/x", "gs://bucket/x", "gs"),
        ("dbfs:/offsetscope/ck", "dbfs:/offsetscope/ck", "dbfs"),
        ("file:///data/x", "/data/x", ""),
        ("file:/data/x", "/data/x", ""),
        ("/Volumes/main/offsetscope/ck", "/Volumes/main/offsetscope/ck", ""),
        ("/data/x", "/data/x", ""),
        (".work/warehouse", "/srv/offsetscope/.work/warehouse", ""),
        ("rel/hdfs:x", "/srv/offsetscope/rel/hdfs:x", ""),
    ],
)
def test_a_location_is_a_uri_as_written_or_a_local_path(value: str, text: str, scheme: str) -> None:
    location = paths.resolve(value, ROOT)
    assert location == Location(text, scheme)
    assert location.is_local is (scheme == "")


def test_relative_paths_are_relative_to_the_project_root_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "deploy" / "conf"
    conf.mkdir(parents=True)
    monkeypatch.setenv(config.CONF_DIR_VARIABLE, str(conf))
    monkeypatch.chdir(tmp_path)
    assert paths.resolve_path(".work/ck") == str(tmp_path / "deploy" / ".work" / "ck")
    assert paths.resolve_path("~/x") == str(Path.home() / "x")


@pytest.mark.parametrize(
    ("base", "joined"),
    [
        ("hdfs:///user/x/ck", "hdfs:///user/x/ck/offsetscope_ingest"),
        ("hdfs://nn:8020/ck/", "hdfs://nn:8020/ck/offsetscope_ingest"),
        ("s3a://bucket", "s3a://bucket/offsetscope_ingest"),
        ("dbfs:/", "dbfs:/offsetscope_ingest"),
        ("/data/ck", "/data/ck/offsetscope_ingest"),
    ],
)
def test_joining_keeps_the_scheme_and_authority(base: str, joined: str) -> None:
    assert str(paths.resolve(base, ROOT).join("offsetscope_ingest")) == joined


def test_a_local_only_setting_refuses_a_uri_naming_the_key() -> None:
    with pytest.raises(
        paths.InvalidLocationError, match=r"^storage.metastore_dir: must be a local path"
    ):
        paths.local_path("hdfs:///metastore", "storage.metastore_dir")


def test_only_local_folders_are_prepared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    storage = config.StorageConfig(
        warehouse_dir="s3a://bucket/warehouse",
        checkpoint_dir=str(tmp_path / "ck"),
        metastore="hive",
        metastore_uri="thrift://metastore:9083",
    )
    assert secrets_files.prepare_storage(storage) == [tmp_path / "ck"]
    assert not (tmp_path / "s3a:").exists()


def test_metastore_uri_needs_the_hive_metastore() -> None:
    with pytest.raises(config.InvalidConfigError, match=r"storage.metastore_uri: only"):
        config.from_mapping(config.Config, {"storage": {"metastore_uri": "thrift://m:9083"}})
    with pytest.raises(config.InvalidConfigError, match=r"must be thrift://"):
        config.from_mapping(
            config.Config, {"storage": {"metastore": "hive", "metastore_uri": "m:9083"}}
        )


def test_python_reader_takes_the_s3a_endpoint_settings() -> None:
    conf = {
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.secret.key": "never-copied",
        "spark.sql.shuffle.partitions": "2",
    }
    assert paths.python_fs_options(conf) == {
        "fs.s3a.endpoint": "http://127.0.0.1:9000",
        "fs.s3a.path.style.access": "true",
    }


def test_remote_path_reads_like_a_local_one(tmp_path: Path) -> None:
    # pyarrow's local file system behind the same interface the S3/GCS/Azure ones serve.
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "00000000000000000000.log").write_bytes(b"0123456789")
    root = RemotePath("mem://root", pafs.LocalFileSystem(), str(tmp_path))
    child = root / "t-0"
    assert child.is_dir()
    assert not child.is_file()
    assert child.exists()
    assert [p.name for p in child.iterdir()] == ["00000000000000000000.log"]
    segment = next(child.iterdir())
    assert str(segment) == "mem://root/t-0/00000000000000000000.log"
    with segment.open() as handle:
        assert paths.file_size(handle) == 10
        handle.seek(4)
        assert handle.read(3) == b"456"
    assert not (root / "missing").exists()


def test_the_log_readers_list_a_remote_directory(tmp_path: Path) -> None:
    from offsetscope.protocol.log import list_segments

    for name in ("00000000000000000000.log", "00000000000000000000.index", "x.txt"):
        (tmp_path / name).write_bytes(b"")
    remote = RemotePath("mem://p-0", pafs.LocalFileSystem(), str(tmp_path))
    (segment,) = list_segments(remote)
    assert str(segment.log) == "mem://p-0/00000000000000000000.log"
    assert str(segment.index) == "mem://p-0/00000000000000000000.index"
    assert segment.time_index is None


@pytest.mark.parametrize(
    ("cause", "meaning"),
    [
        (
            (
                "java.net.ConnectException: Call From vm/127.0.0.1 to localhost:1 failed on"
                " connection exception: java.net.ConnectException: Connection refused"
            ),
            "cannot reach the file system's server",
        ),
        (
            (
                "org.apache.hadoop.fs.s3a.UnknownStoreException: `s3a://no-such-bucket/x':"
                " getFileStatus on s3a://no-such-bucket/x: NoSuchBucketException"
            ),
            "the bucket does not exist",
        ),
        (
            (
                "org.apache.hadoop.security.AccessControlException: Permission denied: user=alice,"
                ' access=WRITE, inode="/":root:supergroup:drwxr-xr-x'
            ),
            "no access",
        ),
    ],
)
def test_an_access_error_names_the_key_the_location_and_the_cause(cause: str, meaning: str) -> None:
    err = StorageAccessError("storage.checkpoint_dir", "hdfs://nn/ck", "write there", cause)
    assert str(err).startswith(
        f"storage.checkpoint_dir = hdfs://nn/ck: cannot write there ({meaning}): "
    )
    assert cause.split(":")[0] in str(err)
    assert err.key_path == "storage.checkpoint_dir"


def test_a_missing_remote_log_directory_fails_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(
        StorageAccessError, match=r"^sources.segments.log_dir = hdfs://127.0.0.1:1/x"
    ):
        paths.check_readable("sources.segments.log_dir", "hdfs://127.0.0.1:1/x")


def test_config_overlays_keep_uris() -> None:
    cfg = config.with_storage(config.Config(), schema="s")
    cfg = dataclasses.replace(
        cfg, storage=dataclasses.replace(cfg.storage, checkpoint_dir="hdfs:///ck")
    )
    from offsetscope.pipelines.ingest import checkpoint_path

    assert checkpoint_path(cfg, "q") == "hdfs:///ck/q"
