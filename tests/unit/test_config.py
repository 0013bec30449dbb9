"""Config loading: base + environment overlay into frozen dataclasses, errors name the key path."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from offsetscope import config
from offsetscope.config import Config, InvalidConfigError, load


def _write(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text)


def test_repository_config_loads() -> None:
    cfg = load("local")
    assert isinstance(cfg, Config)
    assert cfg.env == "local"
    assert cfg.storage.schema == "offsetscope"
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.env = "x"  # type: ignore[misc]


def test_environment_overlays_base(tmp_path: Path) -> None:
    _write(tmp_path, "base.toml", '[storage]\nschema = "a"\nwarehouse_dir = "w"\n')
    _write(tmp_path, "prod.toml", '[storage]\nschema = "ops"\n')
    cfg = load("prod", tmp_path)
    assert cfg.storage.schema == "ops"
    assert cfg.storage.warehouse_dir == "w"


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('[storage]\nschemaa = "x"\n', "storage.schemaa"),
        (
            '[sources.kafka]\nmax_offsets_per_trigger = "many"\n',
            "sources.kafka.max_offsets_per_trigger",
        ),
        ("[sources.kafka]\nmax_offsets_per_trigger = 0\n", "sources.kafka.max_offsets_per_trigger"),
        ('[sources]\nkind = "ftp"\n', "sources.kind"),
        ('[sources.kafka]\nisolation_level = "dirty"\n', "sources.kafka.isolation_level"),
        ("[spark]\nshuffle_partitions = true\n", "spark.shuffle_partitions"),
        ('[pipeline]\nlag_interval = "often"\n', "pipeline.lag_interval"),
        ('[pipeline]\nlag_interval = "0s"\n', "pipeline.lag_interval"),
        ('storage = "flat"\n', "storage"),
    ],
)
def test_bad_config_names_the_key_path(tmp_path: Path, text: str, path: str) -> None:
    _write(tmp_path, "base.toml", text)
    with pytest.raises(InvalidConfigError) as info:
        load("base", tmp_path)
    assert info.value.key_path == path
    assert path in str(info.value)


def test_missing_environment_file(tmp_path: Path) -> None:
    _write(tmp_path, "base.toml", "")
    with pytest.raises(InvalidConfigError, match="does not exist"):
        load("nope", tmp_path)


def test_invalid_toml(tmp_path: Path) -> None:
    _write(tmp_path, "base.toml", "[storage\n")
    with pytest.raises(InvalidConfigError, match="not valid TOML"):
        load("base", tmp_path)


def test_overlays_point_a_loaded_configuration_elsewhere(tmp_path: Path) -> None:
    base = config.load("local")
    seg = config.with_segment_source(base, tmp_path / "logs", max_records_per_trigger=500)
    assert (seg.sources.kind, seg.sources.segments.log_dir) == ("segments", str(tmp_path / "logs"))
    assert seg.sources.segments.max_records_per_trigger == 500
    kafka = config.with_kafka_source(base, "127.0.0.1:1234", isolation_level="read_uncommitted")
    assert kafka.sources.kind == "kafka"
    assert kafka.sources.kafka.bootstrap_servers == "127.0.0.1:1234"
    assert kafka.sources.kafka.isolation_level == "read_uncommitted"
    stored = config.with_storage(base, work_dir=tmp_path, schema="s1")
    assert stored.storage.warehouse_dir == str(tmp_path / "warehouse")
    assert stored.storage.metastore_dir == str(tmp_path / "metastore")
    assert stored.storage.checkpoint_dir == str(tmp_path / "checkpoints")
    assert stored.storage.schema == "s1"
    moved = config.with_storage(stored, checkpoint_dir=tmp_path / "elsewhere")
    assert moved.storage.checkpoint_dir == str(tmp_path / "elsewhere")
    assert moved.storage.warehouse_dir == stored.storage.warehouse_dir
    later = config.with_pipeline(base, trigger="available_now")
    assert later.pipeline.trigger == "available_now"
    assert later.sources == base.sources  # everything else untouched


# ----------------------------------------------------------------------------- enumerations


@pytest.mark.parametrize(
    ("text", "path", "allowed"),
    [
        (
            '[sources.kafka]\nstarting_offsets = "latestt"\n',
            "sources.kafka.starting_offsets",
            "'latest'",
        ),
        (
            '[sources.kafka.security]\nprotocol = "TLS"\n',
            "sources.kafka.security.protocol",
            "'SASL_SSL'",
        ),
        (
            '[sources.kafka.security]\nprotocol = "SASL_SSL"\nsasl_mechanism = "SCRAM"\n',
            "sources.kafka.security.sasl_mechanism",
            "'SCRAM-SHA-512'",
        ),
        ('[sources]\nkind = "ftp"\n', "sources.kind", "'segments'"),
        ('[pipeline]\ntrigger = "continuous"\n', "pipeline.trigger", "'processing_time'"),
        ('[alerts]\ntrigger = "once"\n', "alerts.trigger", "'available_now'"),
        ('[broker]\nlistener_security = "SSL"\n', "broker.listener_security", "'SASL_PLAINTEXT'"),
        (
            '[alerts.notify.webhooks.ops]\nurl = "env:U"\nmin_severity = "high"\n',
            "alerts.notify.webhooks.ops.min_severity",
            "'critical'",
        ),
        (
            '[alerts.data_loss.groups."batch-*"]\nseverity = "page"\n',
            "alerts.data_loss.groups.batch-*.severity",
            "'warning'",
        ),
    ],
)
def test_enumerated_values_are_checked_at_load(
    tmp_path: Path, text: str, path: str, allowed: str
) -> None:
    _write(tmp_path, "base.toml", text)
    with pytest.raises(InvalidConfigError) as info:
        load("base", tmp_path)
    assert info.value.key_path == path
    assert "is not one of" in str(info.value)
    assert allowed in str(info.value)


def test_misspelt_starting_offsets_fails_naming_the_key(tmp_path: Path) -> None:
    extra = tmp_path / "extra.toml"
    extra.write_text('[sources.kafka]\nstarting_offsets = "latestt"\n')
    with pytest.raises(InvalidConfigError) as info:
        load("local", extra=extra)
    assert info.value.key_path == "sources.kafka.starting_offsets"
    assert str(info.value) == (
        "config key sources.kafka.starting_offsets: 'latestt' is not one of 'earliest', 'latest'"
        " or a JSON object of offsets per topic and partition"
    )


@pytest.mark.parametrize(
    "value", ["earliest", "latest", '{"__consumer_offsets": {"0": 42, "1": -2}}']
)
def test_starting_offsets_spark_accepts(tmp_path: Path, value: str) -> None:
    _write(tmp_path, "base.toml", f"[sources.kafka]\nstarting_offsets = '{value}'\n")
    assert load("base", tmp_path).sources.kafka.starting_offsets == value


@pytest.mark.parametrize("value", ['{"t": 42}', '{"t": {"0": "42"}}', '{"t": {"x": 1}}', "{oops"])
def test_starting_offsets_json_must_be_offsets_per_partition(tmp_path: Path, value: str) -> None:
    _write(tmp_path, "base.toml", f"[sources.kafka]\nstarting_offsets = '{value}'\n")
    with pytest.raises(InvalidConfigError, match="offsets per topic and partition") as info:
        load("base", tmp_path)
    assert info.value.key_path == "sources.kafka.starting_offsets"


# ----------------------------------------------------------------------------- durations


def test_every_duration_is_parsed_once_into_a_typed_value() -> None:
    cfg = load("local")
    assert isinstance(cfg.pipeline.processing_time, config.Duration)
    assert (cfg.pipeline.processing_time, cfg.pipeline.processing_time.ms) == ("30s", 30_000)
    assert cfg.alerts.rebalance_storm.window.ms == 600_000
    assert cfg.quality.future_tolerance.ms == 86_400_000
    assert cfg.pipeline.lag_interval is None


@pytest.mark.parametrize(
    ("text", "spark_interval", "delta_interval"),
    [
        ("30s", "30 seconds", "interval 30 seconds"),
        ("1m", "1 minute", "interval 1 minute"),
        ("1.5h", "90 minutes", "interval 90 minutes"),
        ("30d", "30 days", "interval 30 days"),
        ("1500ms", "1500 milliseconds", "interval 1500 milliseconds"),
    ],
)
def test_durations_become_spark_and_delta_intervals_at_the_edge(
    text: str, spark_interval: str, delta_interval: str
) -> None:
    d = config.Duration(text)
    assert (d.spark_interval, d.delta_interval) == (spark_interval, delta_interval)


@pytest.mark.parametrize(
    ("key", "old", "new"),
    [
        ("[pipeline]\nprocessing_time", "30 seconds", "30s"),
        ("[pipeline]\nlog_retention", "interval 30 days", "30d"),
        ("[pipeline]\ndeleted_file_retention", "interval 7 days", "7d"),
        ("[alerts]\nprocessing_time", "1 minute", "1m"),
        ("[alerts.hanging_transaction]\nmargin", "500 milliseconds", "500ms"),
    ],
)
def test_an_old_style_duration_fails_showing_the_accepted_form(
    tmp_path: Path, key: str, old: str, new: str
) -> None:
    _write(tmp_path, "base.toml", f'{key} = "{old}"\n')
    with pytest.raises(InvalidConfigError) as info:
        load("base", tmp_path)
    section, name = key.split("\n")
    assert info.value.key_path == f"{section.strip('[]')}.{name}"
    assert f"write '{new}'" in str(info.value)


def test_replace_validates_and_converts() -> None:
    cfg = load("base")
    later = dataclasses.replace(cfg.pipeline, processing_time="5s", read_committed_groups=["g"])
    assert isinstance(later.processing_time, config.Duration)
    assert later.read_committed_groups == ("g",)
    with pytest.raises(InvalidConfigError) as info:
        config.with_pipeline(cfg, processing_time="5 seconds")
    assert info.value.key_path == "processing_time"
    with pytest.raises(InvalidConfigError) as info:
        config.with_kafka_source(cfg, "h:1", starting_offsets="newest")
    assert info.value.key_path == "starting_offsets"


# ----------------------------------------------------------------------------- types and secrets


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        (
            '[sources.kafka]\nfail_on_data_loss = "yes"\n',
            "sources.kafka.fail_on_data_loss",
            "expected bool, got str",
        ),
        (
            '[sources.kafka]\nmax_offsets_per_trigger = "5"\n',
            "sources.kafka.max_offsets_per_trigger",
            "expected int, got str",
        ),
        ("[storage]\nschema = 5\n", "storage.schema", "expected str, got int"),
        (
            '[pipeline]\nread_committed_groups = "g"\n',
            "pipeline.read_committed_groups",
            "expected an array",
        ),
        ('[spark.conf]\n"spark.x" = 1\n', "spark.conf.spark.x", "expected str, got int"),
        ('[broker]\nheap = "lots"\n', "broker.heap", "not a JVM size"),
        ("[broker]\nport = 70000\n", "broker.port", "at most 65535"),
        ('[tables]\nalerts = "quarantine"\n', "tables.alerts", "also the name of quarantine"),
        (
            '[alerts.notify.webhooks.ops]\ntoken = "env:T"\n',
            "alerts.notify.webhooks.ops.url",
            "required key is missing",
        ),
    ],
)
def test_type_and_value_errors_name_the_key(
    tmp_path: Path, text: str, path: str, message: str
) -> None:
    _write(tmp_path, "base.toml", text)
    with pytest.raises(InvalidConfigError, match=message) as info:
        load("base", tmp_path)
    assert info.value.key_path == path


def test_an_int_key_accepts_no_float_and_a_duration_no_number(tmp_path: Path) -> None:
    _write(tmp_path, "base.toml", '[broker]\nstartup_timeout = "5s"\n')
    assert load("base", tmp_path).broker.startup_timeout.seconds == 5.0
    _write(tmp_path, "base.toml", "[broker]\nstartup_timeout = 5\n")
    with pytest.raises(InvalidConfigError) as info:
        load("base", tmp_path)
    assert info.value.key_path == "broker.startup_timeout"
    _write(tmp_path, "base.toml", "[broker]\nport = 1.5\n")
    with pytest.raises(InvalidConfigError, match="expected int, got float"):
        load("base", tmp_path)


def test_unknown_key_lists_the_known_ones(tmp_path: Path) -> None:
    _write(tmp_path, "base.toml", '[storage]\nschemaa = "x"\n')
    with pytest.raises(InvalidConfigError) as info:
        load("base", tmp_path)
    assert "unknown key (known: catalog, checkpoint_dir, metastore, metastore_dir," in str(
        info.value
    )


def test_errors_never_repeat_a_secret(tmp_path: Path) -> None:
    # A literal secret in a secret key, and one typed into keys of the wrong type.
    _write(
        tmp_path,
        "base.toml",
        '[sources.kafka.security]\nprotocol = "SSL"\nssl_key_password = "S3cret-Value"\n'
        '[sources.kafka]\nmax_offsets_per_trigger = "S3cret-Value"\n'
        '[storage]\ncatalog = ["S3cret-Value"]\n',
    )
    with pytest.raises(InvalidConfigError) as info:
        load("base", tmp_path)
    assert "S3cret-Value" not in str(info.value)
    assert "S3cret-Value" not in repr(info.value)
    assert info.value.__suppress_context__
    # The other problems are named by their key paths.
    assert "sources.kafka.security.ssl_key_password" in str(info.value)


def test_a_section_built_directly_raises_invalid_config_error() -> None:
    with pytest.raises(InvalidConfigError) as info:
        config.StormOverride(window="ten minutes")  # type: ignore[arg-type]
    assert info.value.key_path == "window"
    with pytest.raises(InvalidConfigError) as info:
        config.KafkaSecurityConfig(protocol="SASL_SSL")
    assert info.value.key_path == "sasl_mechanism"


# ----------------------------------------------------------------------------- environment


def test_environment_overrides_one_key_after_the_files(tmp_path: Path) -> None:
    environ = {
        "OFFSETSCOPE__SOURCES__KAFKA__BOOTSTRAP_SERVERS": "broker-1:9092,broker-2:9092",
        "OFFSETSCOPE__SOURCES__KAFKA__MAX_OFFSETS_PER_TRIGGER": "1000",
        "OFFSETSCOPE__SOURCES__KAFKA__FAIL_ON_DATA_LOSS": "true",
        "OFFSETSCOPE__PIPELINE__READ_COMMITTED_GROUPS": '["payments", "billing"]',
        "OFFSETSCOPE__PIPELINE__LAG_INTERVAL": "1m",
        "OFFSETSCOPE__STORAGE__SCHEMA": "123",  # a string key keeps the text
        "OFFSETSCOPE__ALERTS__REBALANCE_STORM__GROUPS__payments__WINDOW": "1h",
        "OFFSETSCOPE__SPARK__CONF__SPARK.DRIVER.MEMORY": "8g",  # matches the file's key
        "OFFSETSCOPE_CONF_DIR_UNRELATED": "x",
        "PATH": "/usr/bin",
    }
    extra = tmp_path / "extra.toml"
    extra.write_text('[sources.kafka]\nbootstrap_servers = "from-the-file:9092"\n')
    cfg = load("local", extra=extra, environ=environ)
    k = cfg.sources.kafka
    assert k.bootstrap_servers == "broker-1:9092,broker-2:9092"
    assert (k.max_offsets_per_trigger, k.fail_on_data_loss) == (1000, True)
    assert cfg.pipeline.read_committed_groups == ("payments", "billing")
    assert cfg.pipeline.lag_interval_ms == 60_000
    assert cfg.storage.schema == "123"
    assert cfg.alerts.rebalance_storm.groups["payments"].window == "1h"
    assert cfg.spark.conf["spark.driver.memory"] == "8g"
    assert "SPARK.DRIVER.MEMORY" not in cfg.spark.conf
    # Without them, the files.
    assert load("local", extra=extra, environ={}).sources.kafka.bootstrap_servers == (
        "from-the-file:9092"
    )


@pytest.mark.parametrize(
    ("variable", "path"),
    [
        ("OFFSETSCOPE__SOURCES__KAFKA__BOOTSTRAP", "sources.kafka.bootstrap"),
        ("OFFSETSCOPE__SOURCE__KIND", "source"),
        ("OFFSETSCOPE__ALERTS__LAG_STALL__GROUPS__g__WINDOW", "alerts.lag_stall.groups.g.window"),
        ("OFFSETSCOPE__ENV", "env"),
    ],
)
def test_an_override_of_an_unknown_key_names_the_variable_and_the_key(
    variable: str, path: str
) -> None:
    with pytest.raises(InvalidConfigError) as info:
        load("local", environ={variable: "x"})
    assert info.value.key_path == path
    assert variable in str(info.value)
    assert "unknown key" in str(info.value)


def test_an_override_is_validated_like_the_files() -> None:
    variable = "OFFSETSCOPE__SOURCES__KAFKA__STARTING_OFFSETS"
    with pytest.raises(InvalidConfigError) as info:
        load("local", environ={variable: "latestt"})
    assert info.value.key_path == "sources.kafka.starting_offsets"
    assert "'latestt' is not one of" in str(info.value)
    assert variable in str(info.value)
    with pytest.raises(InvalidConfigError, match="expected int, got str") as info:
        load("local", environ={"OFFSETSCOPE__SPARK__SHUFFLE_PARTITIONS": "two"})
    assert info.value.key_path == "spark.shuffle_partitions"
    secret = "OFFSETSCOPE__SOURCES__KAFKA__SECURITY__SASL_PASSWORD"
    with pytest.raises(InvalidConfigError, match="must be a reference") as info:
        load("local", environ={secret: "Pa55-w0rd"})
    assert "Pa55-w0rd" not in str(info.value)


def test_load_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFSETSCOPE__STORAGE__SCHEMA", "from_env")
    assert load("local").storage.schema == "from_env"


# ----------------------------------------------------------------------------- where conf/ is


def test_conf_folder_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = Path(__file__).resolve().parents[2] / "conf"
    named = tmp_path / "named"
    # 1. OFFSETSCOPE_CONF_DIR, 2. the checkout's conf/, 3. the copy inside the package.
    assert config.default_conf_dir({"OFFSETSCOPE_CONF_DIR": str(named)}) == named
    assert config.default_conf_dir({}) == checkout
    assert config.project_root({}) == checkout.parent
    monkeypatch.setattr(config, "_CHECKOUT_ROOT", tmp_path / "site-packages")
    assert config.default_conf_dir({}) == config.packaged_conf_dir()
    assert config.default_conf_dir({"OFFSETSCOPE_CONF_DIR": str(named)}) == named
    monkeypatch.chdir(tmp_path)
    assert config.project_root({}) == tmp_path  # never inside the installed package
    assert config.load("local", environ={}).storage.schema == "offsetscope"


def test_the_packaged_copy_is_the_repository_conf() -> None:
    # In a checkout lib/offsetscope/_conf links to conf/: one copy of each file.
    checkout = Path(__file__).resolve().parents[2] / "conf"
    assert config.packaged_conf_dir().resolve() == checkout.resolve()
    names = [p.name for p in config.template_files()]
    assert names == [
        "base.toml",
        "dev.toml",
        "local.toml",
        "prod.toml",
        "yarn.toml",
        config.SCHEMA_FILE,
    ]


def test_write_templates_refuses_to_overwrite(tmp_path: Path) -> None:
    dest = tmp_path / "conf"
    written = config.write_templates(dest)
    assert [p.name for p in written] == [p.name for p in config.template_files()]
    assert (dest / "base.toml").read_bytes() == (
        config.packaged_conf_dir() / "base.toml"
    ).read_bytes()
    assert config.load("prod", dest, environ={}).storage.catalog == "ops"
    (dest / "local.toml").write_text("# mine\n")
    with pytest.raises(FileExistsError, match=r"local\.toml"):
        config.write_templates(dest)
    assert (dest / "local.toml").read_text() == "# mine\n"
    config.write_templates(dest, overwrite=True)
    assert (dest / "local.toml").read_text() != "# mine\n"


def test_offsetscope_init_writes_the_templates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from offsetscope.cli import main

    dest = tmp_path / "conf"
    assert main(["init", str(dest)]) == 0
    printed = capsys.readouterr().out.split()
    assert sorted(printed) == sorted(str(p) for p in dest.iterdir())
    assert (dest / "base.toml").is_file()
    assert main(["init", str(dest)]) == 1
    assert "not overwriting what is there" in capsys.readouterr().err
    assert main(["init", "--force", str(dest)]) == 0


def test_own_groups_are_named_by_the_kafka_source_prefix() -> None:
    cfg = config.load("local")
    assert cfg.sources.kafka.group_id_prefix == "offsetscope-ingest"
    assert config.is_own_group(cfg, "offsetscope-ingest-6f1c-driver-0")
    assert not config.is_own_group(cfg, "payments")
    assert not cfg.alerts.include_own_groups  # left out of the alerts unless asked
    blank = dataclasses.replace(
        cfg,
        sources=dataclasses.replace(
            cfg.sources, kafka=dataclasses.replace(cfg.sources.kafka, group_id_prefix="")
        ),
    )
    assert not config.is_own_group(blank, "payments")  # no prefix: no group is offsetscope's
