#!/usr/bin/env bash
# Submit an offsetscope job (ingest or alerts) with spark-submit: to YARN by default, or to any
# Spark master the same way (the standalone-cluster test submits through this script).
#
#   deploy/yarn/submit.sh JOB [--env ENV] [--conf FILE] [--master URL] [--deploy-mode MODE]
#                         [--archive TAR | --python PATH] [--jars-dir DIR]... [--conf-dir DIR]
#                         [--files FILE]... [--keytab FILE --principal NAME]
#                         [--forward-env NAME]... [--dry-run] [-- SPARK-SUBMIT ARGS...]
#
#   JOB            ingest | alerts (jobs/<JOB>.py, which takes only --env and --conf)
#   --env          conf/<ENV>.toml overlays conf/base.toml (default: yarn)
#   --conf         a further TOML file, overlaid last (shipped with --files)
#   --master       default: yarn
#   --deploy-mode  cluster (default: the driver runs in the YARN application master) or client
#                  (the driver runs here; it needs offsetscope installed, see PYSPARK_DRIVER_PYTHON)
#   --archive      the packed Python environment (default: build/yarn/offsetscope-env.tar.gz,
#                  built by `make yarn-env`), unpacked on every node as ./environment
#   --python       instead of an archive: an interpreter every node has at this path (a shared
#                  file system, or one machine as in the standalone test)
#   --jars-dir     the JVM jars to ship with --jars (default: build/jvm/spark, from `make install`:
#                  Delta and Spark's Kafka source); repeat it for more folders (build/jvm/s3a
#                  where the cluster has no S3A, build/jvm/msk-iam for AWS_MSK_IAM)
#   --conf-dir     where base.toml and <ENV>.toml are (default: conf/)
#   --files        a further file for every container's working folder (a CA bundle, a
#                  krb5.conf): conf/ then names it by its bare file name. Repeatable; --files
#                  given after `--` is merged too (spark-submit keeps only its last --files)
#   --keytab, --principal
#                  Kerberos: spark-submit logs in with them (HDFS, YARN and Hive delegation
#                  tokens, renewed by the application master), and the keytab also lands in
#                  every container as offsetscope.keytab, the name Kafka's GSSAPI login reads
#                  ([sources.kafka.security] kerberos_keytab = "offsetscope.keytab")
#   --forward-env  pass this environment variable to the driver (cluster mode); for secret
#                  references such as env:OFFSETSCOPE_KAFKA_PASSWORD. Its value travels as a
#                  spark.yarn.appMasterEnv setting: Spark's UI redacts names matching
#                  spark.redaction.regex (password, secret, token), but the submitting host's
#                  process list shows it; submit from a trusted host, or use secret scopes.
#   --dry-run      print the spark-submit command (shell-quoted) instead of running it
#
# Cluster mode: the configuration files travel with --files into the driver's working folder,
# found there through OFFSETSCOPE_CONF_DIR=.; the driver and executors run
# ./environment/bin/python from the archive. Client mode: the driver reads --conf-dir directly and
# runs PYSPARK_DRIVER_PYTHON (default: the checkout's .venv/bin/python); executors use the
# archive. A client-mode driver runs in build/yarn/client-driver, whose ./environment is the
# driver's interpreter (Spark starts Python workers on the driver too): give spark-submit
# arguments after `--` as absolute paths. The environment archive does not contain the interpreter itself (venv-pack keeps
# bin/python a link): every node needs the same Python 3.11 at the same path.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
die() { echo "submit.sh: $*" >&2; exit 2; }

JOB="${1:-}"
[[ -n "$JOB" && "$JOB" != -* ]] || die "usage: submit.sh JOB [options] (JOB: ingest | alerts)"
shift
case "$JOB" in
  ingest|alerts) ;;
  *) die "unknown job '$JOB' (ingest | alerts)" ;;
esac

ENV_NAME="yarn"
EXTRA_CONF=""
MASTER="yarn"
DEPLOY_MODE="cluster"
ARCHIVE="$ROOT/build/yarn/offsetscope-env.tar.gz"
PYTHON=""
JARS_DIRS=()
CONF_DIR="$ROOT/conf"
DRY_RUN=0
FORWARD=()
PASSTHROUGH=()
EXTRA_FILES=()
KEYTAB=""
PRINCIPAL=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --env) ENV_NAME="${2:?--env needs a value}"; shift 2 ;;
    --conf) EXTRA_CONF="${2:?--conf needs a file}"; shift 2 ;;
    --master) MASTER="${2:?--master needs a URL}"; shift 2 ;;
    --deploy-mode) DEPLOY_MODE="${2:?--deploy-mode needs client or cluster}"; shift 2 ;;
    --archive) ARCHIVE="${2:?--archive needs a file}"; shift 2 ;;
    --python) PYTHON="${2:?--python needs a path}"; shift 2 ;;
    --jars-dir) JARS_DIRS+=("${2:?--jars-dir needs a folder}"); shift 2 ;;
    --conf-dir) CONF_DIR="${2:?--conf-dir needs a folder}"; shift 2 ;;
    --files) EXTRA_FILES+=("${2:?--files needs a file}"); shift 2 ;;
    --keytab) KEYTAB="${2:?--keytab needs a file}"; shift 2 ;;
    --principal) PRINCIPAL="${2:?--principal needs a name}"; shift 2 ;;
    --forward-env) FORWARD+=("${2:?--forward-env needs a name}"); shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    --)
      shift
      # spark-submit keeps only the last --files: the ones passed through join ours instead.
      while [[ $# -gt 0 ]]; do
        case "$1" in
          --files) EXTRA_FILES+=("${2:?--files needs a file}"); shift 2 ;;
          --files=*) EXTRA_FILES+=("${1#--files=}"); shift ;;
          *) PASSTHROUGH+=("$1"); shift ;;
        esac
      done
      ;;
    *) die "unknown option '$1'" ;;
  esac
done
[[ ${#JARS_DIRS[@]} -gt 0 ]] || JARS_DIRS=("$ROOT/build/jvm/spark")
# Paths given relative to this shell's folder, made absolute: in client mode the driver runs in
# a folder of its own (below).
absolute() { case "$1" in /*|'') printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }
ARCHIVE="$(absolute "$ARCHIVE")"
CONF_DIR="$(absolute "$CONF_DIR")"
EXTRA_CONF="$(absolute "$EXTRA_CONF")"
KEYTAB="$(absolute "$KEYTAB")"
for i in "${!JARS_DIRS[@]}"; do JARS_DIRS[i]="$(absolute "${JARS_DIRS[i]}")"; done
for i in ${EXTRA_FILES[@]+"${!EXTRA_FILES[@]}"}; do
  EXTRA_FILES[i]="$(absolute "${EXTRA_FILES[i]}")"  # a "#link" suffix is kept
done
[[ -z "$KEYTAB" && -z "$PRINCIPAL" || -n "$KEYTAB" && -n "$PRINCIPAL" ]] \
  || die "--keytab and --principal go together"
[[ -z "$KEYTAB" || -f "$KEYTAB" ]] || die "no keytab $KEYTAB"
[[ "$DEPLOY_MODE" == client || "$DEPLOY_MODE" == cluster ]] \
  || die "--deploy-mode must be client or cluster, not '$DEPLOY_MODE'"

SPARK_SUBMIT="${SPARK_SUBMIT:-$(command -v spark-submit || true)}"
[[ -n "$SPARK_SUBMIT" ]] || SPARK_SUBMIT="$ROOT/.venv/bin/spark-submit"

jars=()
shopt -s nullglob
for dir in "${JARS_DIRS[@]}"; do
  found=("$dir"/*.jar)
  [[ ${#found[@]} -gt 0 ]] || die "no jars in $dir: run make install (jvm-jars) or make infra-jars"
  jars+=("${found[@]}")
done
shopt -u nullglob
JARS="$(IFS=,; echo "${jars[*]}")"

[[ -f "$CONF_DIR/base.toml" ]] || die "no $CONF_DIR/base.toml"
[[ -f "$CONF_DIR/$ENV_NAME.toml" ]] || die "no $CONF_DIR/$ENV_NAME.toml for --env $ENV_NAME"
FILES="$CONF_DIR/base.toml,$CONF_DIR/$ENV_NAME.toml"
JOB_ARGS=(--env "$ENV_NAME")
if [[ -n "$EXTRA_CONF" ]]; then
  [[ -f "$EXTRA_CONF" ]] || die "no file $EXTRA_CONF"
  if [[ "$DEPLOY_MODE" == cluster ]]; then
    FILES="$FILES,$EXTRA_CONF"
    JOB_ARGS+=(--conf "$(basename "$EXTRA_CONF")")
  else
    JOB_ARGS+=(--conf "$(cd "$(dirname "$EXTRA_CONF")" && pwd)/$(basename "$EXTRA_CONF")")
  fi
fi

for file in ${EXTRA_FILES[@]+"${EXTRA_FILES[@]}"}; do
  [[ -f "${file%%#*}" ]] || die "no file ${file%%#*} (--files)"
  FILES="$FILES,$file"
done
if [[ -n "$KEYTAB" ]]; then
  # A link name of its own: spark-submit distributes --keytab under a generated name, and the
  # distributed cache refuses one name twice.
  FILES="$FILES,$KEYTAB#offsetscope.keytab"
fi

cmd=("$SPARK_SUBMIT" --master "$MASTER" --deploy-mode "$DEPLOY_MODE"
     --name "offsetscope-$JOB-$ENV_NAME" --jars "$JARS" --files "$FILES")
if [[ -n "$KEYTAB" ]]; then
  cmd+=(--principal "$PRINCIPAL" --keytab "$KEYTAB")
fi
driver_env=()
if [[ -n "$PYTHON" ]]; then
  cmd+=(--conf "spark.pyspark.python=$PYTHON" --conf "spark.executorEnv.PYSPARK_PYTHON=$PYTHON")
  if [[ "$DEPLOY_MODE" == cluster ]]; then
    cmd+=(--conf "spark.yarn.appMasterEnv.PYSPARK_PYTHON=$PYTHON"
          --conf "spark.yarn.appMasterEnv.OFFSETSCOPE_CONF_DIR=.")
  else
    driver_env+=("PYSPARK_DRIVER_PYTHON=${PYSPARK_DRIVER_PYTHON:-$PYTHON}"
                 "OFFSETSCOPE_CONF_DIR=$CONF_DIR")
  fi
else
  [[ -f "$ARCHIVE" ]] || die "no packed environment at $ARCHIVE: run make yarn-env (or pass --python)"
  cmd+=(--archives "$ARCHIVE#environment"
        --conf "spark.executorEnv.PYSPARK_PYTHON=./environment/bin/python")
  if [[ "$DEPLOY_MODE" == cluster ]]; then
    cmd+=(--conf "spark.yarn.appMasterEnv.PYSPARK_PYTHON=./environment/bin/python"
          --conf "spark.yarn.appMasterEnv.OFFSETSCOPE_CONF_DIR=.")
  else
    driver_python="${PYSPARK_DRIVER_PYTHON:-$ROOT/.venv/bin/python}"
    driver_env+=("PYSPARK_DRIVER_PYTHON=$driver_python"
                 "PYSPARK_PYTHON=./environment/bin/python"
                 "OFFSETSCOPE_CONF_DIR=$CONF_DIR")
    # PYSPARK_PYTHON names the executors' interpreter, but the driver runs it too: Spark plans
    # a Python data source (the segment source) in a Python worker it starts on the driver
    # from the same setting. So the driver runs in a folder whose ./environment is the
    # driver's own environment (a virtual environment's folder, or a bare interpreter).
    DRIVER_DIR="$ROOT/build/yarn/client-driver"
    if [[ $DRY_RUN -eq 0 ]]; then
      [[ -x "$driver_python" ]] || die "no driver interpreter $driver_python (PYSPARK_DRIVER_PYTHON)"
      rm -rf "$DRIVER_DIR/environment"
      mkdir -p "$DRIVER_DIR"
      venv="$(cd "$(dirname "$driver_python")/.." && pwd)"
      if [[ -f "$venv/pyvenv.cfg" && -x "$venv/bin/python" ]]; then
        ln -s "$venv" "$DRIVER_DIR/environment"
      else
        mkdir -p "$DRIVER_DIR/environment/bin"
        ln -s "$driver_python" "$DRIVER_DIR/environment/bin/python"
      fi
    fi
  fi
fi
for name in ${FORWARD[@]+"${FORWARD[@]}"}; do
  [[ -n "${!name:-}" ]] || die "--forward-env $name: the variable is not set"
  if [[ "$DEPLOY_MODE" == cluster ]]; then
    cmd+=(--conf "spark.yarn.appMasterEnv.$name=${!name}")
  fi  # client mode: the driver inherits this shell's environment
done
cmd+=(${PASSTHROUGH[@]+"${PASSTHROUGH[@]}"} "$ROOT/jobs/$JOB.py" "${JOB_ARGS[@]}")

if [[ $DRY_RUN -eq 1 ]]; then
  shown=()
  for arg in "${cmd[@]}"; do
    for name in ${FORWARD[@]+"${FORWARD[@]}"}; do
      [[ "$arg" == "spark.yarn.appMasterEnv.$name="* ]] && arg="spark.yarn.appMasterEnv.$name=***"
    done
    shown+=("$arg")
  done
  line="$(printf '%q ' ${driver_env[@]+"${driver_env[@]}"} "${shown[@]}")"
  echo "${line% }"
  exit 0
fi
[[ -z "${DRIVER_DIR:-}" ]] || cd "$DRIVER_DIR"  # the options' paths are absolute (above)
exec env ${driver_env[@]+"${driver_env[@]}"} "${cmd[@]}"
