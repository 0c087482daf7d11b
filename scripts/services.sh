#!/usr/bin/env bash
# Local backing services for development and the integration/e2e tests:
# PostgreSQL 15, Redis and a single-node Apache Kafka 4.1.2 (KRaft), all on 127.0.0.1.
#
#   scripts/services.sh up       start whatever is not running, wait until ready
#   scripts/services.sh down     stop all three
#   scripts/services.sh status   one line per service; non-zero exit if any is down
#   scripts/services.sh env      print the HCP_TEST_* exports (eval "$(scripts/services.sh env)")
#   scripts/services.sh kafka-libs   print the directory of the Kafka jars, assembling them first
#                                    if needed (the fault tests run private brokers from them)
#
# Everything is idempotent: `up` on running services only probes them. There is no
# systemd on our machines (containers, CI), so each daemon is started directly and
# tracked by a pid file under .hcp-services/ (gitignored), next to its data and logs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="$ROOT/.hcp-services"

PG_VERSION=15
PG_CLUSTER=main
PG_PORT=5432
PG_BIN="/usr/lib/postgresql/$PG_VERSION/bin"

REDIS_PORT=6379
REDIS_DIR="$STATE/redis"

KAFKA_PORT=9092
KAFKA_CONTROLLER_PORT=9093
KAFKA_DIR="$STATE/kafka"
# The jars are the same for every checkout of the same pom, so they live where every
# checkout finds them: a checkout whose `up` found another checkout's broker running still
# has them for the fault tests' private brokers (HCP_SERVICES_CACHE moves the cache).
SERVICES_CACHE="${HCP_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hcp-services}"
KAFKA_LIBS="$SERVICES_CACHE/kafka-libs"
OLD_KAFKA_LIBS="$KAFKA_DIR/libs"  # where they were assembled before, per checkout
KAFKA_DATA="$KAFKA_DIR/data"
KAFKA_PID="$KAFKA_DIR/kafka.pid"
KAFKA_POM="$ROOT/scripts/kafka/pom.xml"
KAFKA_READY_TIMEOUT=90

TEST_ENV=(
  "HCP_TEST_POSTGRES_URL=postgresql+psycopg://hcp:hcp@127.0.0.1:$PG_PORT/hcp_test"
  "HCP_TEST_KAFKA_BOOTSTRAP=127.0.0.1:$KAFKA_PORT"
  "HCP_TEST_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0"
)

say() { printf '%-9s %s\n' "$1" "$2"; }
die() { echo "services.sh: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# The daemons run as root here, but postgres refuses to; on a non-root workstation we
# need sudo for apt and for acting as the postgres user.
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi
}

# A fresh CI machine lacks some packages; `apt-get update` is slow, so run it at most once.
APT_UPDATED=0
apt_install() {
  echo "services.sh: installing $* with apt-get" >&2
  if [ "$APT_UPDATED" = 0 ]; then
    as_root apt-get update -q >&2
    APT_UPDATED=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2
}

# ---------------------------------------------------------------- PostgreSQL
# We use the Debian-managed cluster "15 main" (pg_ctlcluster) rather than an own data
# dir: initdb/postgres refuse to run as root, and the Debian wrappers already handle
# the switch to the postgres user, the socket dir and the log file.

pg_ready() { "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" 2>/dev/null; }

pg_up() {
  local t0; t0=$(now)
  [ -x "$PG_BIN/postgres" ] || apt_install "postgresql-$PG_VERSION" "postgresql-client-$PG_VERSION"
  if ! pg_lsclusters -h | awk -v v="$PG_VERSION" -v c="$PG_CLUSTER" '$1==v && $2==c {f=1} END {exit !f}'; then
    as_root pg_createcluster "$PG_VERSION" "$PG_CLUSTER" --port "$PG_PORT" >&2
  fi
  local port
  port=$(pg_lsclusters -h | awk -v v="$PG_VERSION" -v c="$PG_CLUSTER" '$1==v && $2==c {print $3}')
  [ "$port" = "$PG_PORT" ] || die "cluster $PG_VERSION/$PG_CLUSTER is configured for port $port, expected $PG_PORT"

  local how="already running"
  if ! as_root pg_ctlcluster "$PG_VERSION" "$PG_CLUSTER" status >/dev/null 2>&1; then
    as_root pg_ctlcluster "$PG_VERSION" "$PG_CLUSTER" start 9>&-
    how="started"
  fi
  local i
  for i in $(seq 1 60); do pg_ready && break; sleep 0.5; done
  pg_ready || die "postgres did not become ready; see /var/log/postgresql/postgresql-$PG_VERSION-$PG_CLUSTER.log"

  # Role hcp/hcp owns both databases. It is SUPERUSER on purpose: the tests drop the
  # append-only triggers to simulate tampering, which only an owner/superuser may do,
  # and this cluster is a local development/test one, never a deployment.
  # Re-applied on every `up` (cheap) so a changed password or attribute heals itself.
  as_postgres psql -X -q -v ON_ERROR_STOP=1 -p "$PG_PORT" -d postgres >/dev/null <<'SQL'
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'hcp') THEN
    CREATE ROLE hcp;
  END IF;
END
$$;
ALTER ROLE hcp WITH LOGIN SUPERUSER PASSWORD 'hcp';
SELECT 'CREATE DATABASE hcp OWNER hcp'
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'hcp') \gexec
SELECT 'CREATE DATABASE hcp_test OWNER hcp'
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'hcp_test') \gexec
SQL
  say postgres "up    127.0.0.1:$PG_PORT  ($how, $(since "$t0"); role hcp, dbs hcp + hcp_test)"
}

pg_down() {
  if as_root pg_ctlcluster "$PG_VERSION" "$PG_CLUSTER" status >/dev/null 2>&1; then
    # fast = roll back open transactions (tests may leave some) instead of waiting.
    as_root pg_ctlcluster "$PG_VERSION" "$PG_CLUSTER" stop -m fast
    say postgres "stopped"
  else
    say postgres "not running"
  fi
}

# --------------------------------------------------------------------- Redis

redis_ready() {
  command -v redis-cli >/dev/null && \
    [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]
}

redis_up() {
  local t0; t0=$(now)
  command -v redis-server >/dev/null || apt_install redis-server
  # The Debian package may start its own instance on 6379 from its postinst; that one
  # serves the tests just as well, so anything answering PONG counts as running.
  if redis_ready; then
    say redis "up    127.0.0.1:$REDIS_PORT  (already running, $(since "$t0"))"
    return
  fi
  mkdir -p "$REDIS_DIR"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" \
    --dir "$REDIS_DIR" --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" 9>&-
  local i
  for i in $(seq 1 50); do redis_ready && break; sleep 0.2; done
  redis_ready || { tail -n 20 "$REDIS_DIR/redis.log" >&2 || true; die "redis did not answer PING"; }
  say redis "up    127.0.0.1:$REDIS_PORT  (started, $(since "$t0"))"
}

redis_down() {
  if redis_ready; then
    # SHUTDOWN (not kill via pid file) also stops an instance the apt postinst started.
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown >/dev/null 2>&1 || true
    local i
    for i in $(seq 1 50); do redis_ready || break; sleep 0.2; done
    say redis "stopped"
  else
    say redis "not running"
  fi
}

# --------------------------------------------------------------------- Kafka
# No release tarball is reachable from our machines, only Maven Central, so the broker
# is assembled from the kafka_2.13 artifact and its dependencies (scripts/kafka/pom.xml)
# and run as `java kafka.Kafka`, which is all bin/kafka-server-start.sh does.

kafka_pid() {
  # The pid file alone could point at a recycled pid; require it to be our broker.
  local pid
  pid=$(cat "$KAFKA_PID" 2>/dev/null) || return 1
  [ -n "$pid" ] && grep -qa "kafka.Kafka" "/proc/$pid/cmdline" 2>/dev/null || return 1
  echo "$pid"
}

# A real Kafka protocol round trip, not just an open port: the broker only accepts
# requests on 9092 once it has joined its own KRaft quorum and caught up with metadata,
# and a Metadata response that lists a broker is what clients wait for too.
# Plain python3 + socket, so it works before the project venv exists.
kafka_ready() {
  "$(command -v python3 || command -v python3.11)" - "$KAFKA_PORT" <<'PY' 2>/dev/null
import socket, struct, sys

port = int(sys.argv[1])
client = b"hcp-services"
# Metadata v4 request, header v1: api_key=3, api_version=4, correlation_id=7, client_id;
# body: topics=null (-1, i.e. all), allow_auto_topic_creation=false.
body = struct.pack(">hhih", 3, 4, 7, len(client)) + client + struct.pack(">ib", -1, 0)
with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
    s.settimeout(3)
    s.sendall(struct.pack(">i", len(body)) + body)
    def read(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf
    (size,) = struct.unpack(">i", read(4))
    resp = read(size)
# response header v0: correlation_id; body v4: throttle_time_ms, brokers[...]
corr, _throttle, n_brokers = struct.unpack(">iii", resp[:12])
sys.exit(0 if corr == 7 and n_brokers >= 1 else 1)
PY
}

libs_current() { [ -f "$1/.pom.sha256" ] && [ "$(cat "$1/.pom.sha256")" = "$2" ]; }

kafka_libs() {
  # Maven runs only when the cached jars are missing or the pom changed since.
  local want
  want=$(sha256sum "$KAFKA_POM" | cut -d' ' -f1)
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  libs_current "$KAFKA_LIBS" "$want" && return
  mkdir -p "$SERVICES_CACHE"
  # One assembler at a time across checkouts; the others wait and find the jars made.
  exec 8>"$SERVICES_CACHE/.kafka-libs.lock"
  flock 8
  if libs_current "$KAFKA_LIBS" "$want"; then exec 8>&-; return; fi
  rm -rf "$KAFKA_LIBS.tmp"
  if libs_current "$OLD_KAFKA_LIBS" "$want"; then
    cp -r "$OLD_KAFKA_LIBS" "$KAFKA_LIBS.tmp"  # this checkout assembled them before
  else
    command -v mvn >/dev/null || apt_install maven
    echo "services.sh: resolving Kafka jars from Maven Central into $KAFKA_LIBS (first run only)" >&2
    mvn -q -B -Dstyle.color=never -f "$KAFKA_POM" dependency:copy-dependencies \
      -DoutputDirectory="$KAFKA_LIBS.tmp" >"$SERVICES_CACHE/maven.log" 2>&1 \
      || { tail -n 30 "$SERVICES_CACHE/maven.log" >&2; die "maven could not resolve the Kafka jars"; }
    echo "$want" >"$KAFKA_LIBS.tmp/.pom.sha256"
  fi
  rm -rf "$KAFKA_LIBS"
  mv "$KAFKA_LIBS.tmp" "$KAFKA_LIBS"
  exec 8>&-
}

kafka_config() {
  # Rewritten on every start so edits here take effect; the data dir stays.
  cat >"$KAFKA_DIR/server.properties" <<EOF
# Generated by scripts/services.sh; edit the script, not this file.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$KAFKA_DATA
num.partitions=3
auto.create.topics.enable=true
# A single node can only replicate once.
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
# The first consumer group / transactional producer creates these internal topics;
# the default 50 partitions make that first use take seconds on a 2-core machine.
offsets.topic.num.partitions=5
transaction.state.log.num.partitions=5
# Tests start consumer groups constantly; don't wait 3 s for more members to join.
group.initial.rebalance.delay.ms=0
EOF
  cat >"$KAFKA_DIR/log4j2.properties" <<EOF
# INFO to a rolling file; only errors reach kafka.out (the process's stdout).
status = warn
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = $KAFKA_DIR/logs/server.log
appender.file.filePattern = $KAFKA_DIR/logs/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 50MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
appender.console.filter.threshold.type = ThresholdFilter
appender.console.filter.threshold.level = error
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
rootLogger.appenderRef.console.ref = console
# The request/state-change loggers are very chatty at INFO and help nobody in tests.
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.state.name = state.change.logger
logger.state.level = warn
EOF
}

kafka_log_tail() {
  echo "--- tail of $KAFKA_DIR/logs/server.log" >&2
  tail -n 30 "$KAFKA_DIR/logs/server.log" >&2 2>/dev/null || true
  echo "--- tail of $KAFKA_DIR/kafka.out" >&2
  tail -n 15 "$KAFKA_DIR/kafka.out" >&2 2>/dev/null || true
}

kafka_up() {
  local t0; t0=$(now)
  local how="already running"
  # The jars first, whoever runs the broker: the fault tests start private ones from them.
  kafka_libs
  if ! kafka_pid >/dev/null; then
    if kafka_ready; then
      # Something we did not start (another checkout's broker?) owns the port.
      say kafka "up    127.0.0.1:$KAFKA_PORT  (answering, but not started from this checkout)"
      return
    fi
    mkdir -p "$KAFKA_DIR/logs" "$KAFKA_DATA"
    kafka_config
    local java_cmd=(java -Xms256m -Xmx1g -XX:+UseG1GC -XX:MaxGCPauseMillis=20
      -Djava.awt.headless=true
      "-Dlog4j2.configurationFile=$KAFKA_DIR/log4j2.properties"
      -cp "$KAFKA_LIBS/*")
    # KRaft storage is formatted once; meta.properties marks a formatted log dir.
    # (--standalone is not usable with a static controller.quorum.voters.)
    if [ ! -f "$KAFKA_DATA/meta.properties" ]; then
      local cluster_id
      cluster_id=$("${java_cmd[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)
      "${java_cmd[@]}" kafka.tools.StorageTool format -t "$cluster_id" \
        -c "$KAFKA_DIR/server.properties" >"$KAFKA_DIR/format.log" 2>&1 \
        || { cat "$KAFKA_DIR/format.log" >&2; die "kafka storage format failed"; }
    fi
    # setsid: the broker must outlive this script and its process group (CI runners
    # and terminals kill the group when the calling command ends).
    nohup setsid "${java_cmd[@]}" kafka.Kafka "$KAFKA_DIR/server.properties" \
      >"$KAFKA_DIR/kafka.out" 2>&1 </dev/null 9>&- &
    echo $! >"$KAFKA_PID"
    how="started"
  fi
  local deadline=$(( $(date +%s) + KAFKA_READY_TIMEOUT ))
  until kafka_ready; do
    if ! kafka_pid >/dev/null; then
      kafka_log_tail
      die "kafka exited during startup"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      kafka_log_tail
      die "kafka did not answer a metadata request on 127.0.0.1:$KAFKA_PORT within ${KAFKA_READY_TIMEOUT}s"
    fi
    sleep 1
  done
  say kafka "up    127.0.0.1:$KAFKA_PORT  ($how, $(since "$t0"); KRaft, logs in .hcp-services/kafka/logs)"
}

kafka_down() {
  local pid
  if ! pid=$(kafka_pid); then
    rm -f "$KAFKA_PID"
    say kafka "not running"
    return
  fi
  # SIGTERM triggers a controlled shutdown that closes log segments cleanly, so the
  # next start skips log recovery; give it a while before forcing.
  kill "$pid"
  local i
  for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null || true
    say kafka "killed (did not stop within 30s)"
  else
    say kafka "stopped"
  fi
  rm -f "$KAFKA_PID"
}

# ------------------------------------------------------------------------ main

print_env() { local kv; for kv in "${TEST_ENV[@]}"; do echo "export $kv"; done; }

lock() {
  # Two `up`s at once (two terminals, CI step + a developer) would race on role
  # creation and on the Kafka pid file; serialise them. Daemons are started with
  # `9>&-` so they do not inherit (and hold forever) the lock descriptor.
  mkdir -p "$STATE"
  exec 9>"$STATE/.lock"
  flock 9
}

status_line() {
  if "$2"; then say "$1" "up    $3"; else say "$1" "DOWN  $3"; return 1; fi
}

case "${1:-}" in
  up)
    lock
    pg_up
    redis_up
    kafka_up
    echo "# environment for the tests:"
    print_env
    ;;
  down)
    lock
    kafka_down
    redis_down
    pg_down
    ;;
  status)
    rc=0
    status_line postgres pg_ready "127.0.0.1:$PG_PORT" || rc=1
    status_line redis redis_ready "127.0.0.1:$REDIS_PORT" || rc=1
    status_line kafka kafka_ready "127.0.0.1:$KAFKA_PORT" || rc=1
    exit "$rc"
    ;;
  env)
    print_env
    ;;
  kafka-libs)
    lock
    kafka_libs
    echo "$KAFKA_LIBS"
    ;;
  *)
    echo "usage: $0 up|down|status|env|kafka-libs" >&2
    exit 2
    ;;
esac
