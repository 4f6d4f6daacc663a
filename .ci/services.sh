# shellcheck shell=bash
# Start the real Redis and PostgreSQL servers the `services` tests need (sourced by .ci/run).
#
# * Installs `redis-server` and `postgresql` from Debian packages when missing.
# * Starts each on 127.0.0.1 on a FREE port (never the default ports), data under
#   $LOOPWRIGHT_SERVICES_DIR (default /tmp/loopwright-services), as an unprivileged user.
# * Waits until both accept connections, creates the database `loopwright_test`.
# * Exports LOOPWRIGHT_TEST_REDIS_URL and LOOPWRIGHT_TEST_POSTGRES_URL.
# * Installs the npm tools the MCP tests drive (install-node-tools.sh) and Debian's chromium for
#   the trace viewer's browser test (install-chromium.sh) and bubblewrap for the code sandbox
#   (install-sandbox.sh), and the MiniLM weights tool selection embeds with
#   (install-offline-models.sh); each skips what is present.
# * Idempotent: sourcing it again reuses servers that are still alive.
#
# Stop them with: lw_services_stop

LW_SVC_DIR="${LOOPWRIGHT_SERVICES_DIR:-/tmp/loopwright-services}"
LW_CI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

_lw_log() { echo "[services] $*" >&2; }

_lw_sudo() {
  if [ "$(id -u)" = "0" ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else "$@"; fi
}

_lw_free_port() {
  python3 - <<'EOF'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

_lw_pg_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  done
  return 1
}

_lw_install_packages() {
  local need=()
  command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
  _lw_pg_bindir >/dev/null || need+=(postgresql)
  if [ "${#need[@]}" -gt 0 ]; then
    _lw_log "installing ${need[*]} from Debian packages"
    _lw_sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    _lw_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${need[@]}" >&2
  fi
  # the Debian package starts its own instances on the default ports; we do not use them
}

# Run a command as the service user (postgres refuses to run as root).
_lw_as_user() {
  if [ "$(id -u)" = "0" ]; then
    su -s /bin/sh "$LW_SVC_USER" -c "$*"
  else
    sh -c "$*"
  fi
}

_lw_start_redis() {
  local port_file="$LW_SVC_DIR/redis.port" port
  if [ -f "$port_file" ]; then
    port="$(cat "$port_file")"
    if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
      _lw_log "redis already running on 127.0.0.1:$port"
      export LOOPWRIGHT_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
      return 0
    fi
  fi
  port="$(_lw_free_port)"
  mkdir -p "$LW_SVC_DIR/redis"
  redis-server --bind 127.0.0.1 --port "$port" --daemonize yes --dir "$LW_SVC_DIR/redis" \
    --pidfile "$LW_SVC_DIR/redis/redis.pid" --logfile "$LW_SVC_DIR/redis/redis.log" \
    --save "" --appendonly no --protected-mode yes >&2
  local i
  for i in $(seq 1 100); do
    if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then break; fi
    sleep 0.1
  done
  redis-cli -h 127.0.0.1 -p "$port" ping | grep -q PONG || { _lw_log "redis did not start"; return 1; }
  echo "$port" >"$port_file"
  _lw_log "redis started on 127.0.0.1:$port"
  export LOOPWRIGHT_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
}

_lw_start_postgres() {
  local bindir port_file="$LW_SVC_DIR/postgres.port" port data="$LW_SVC_DIR/pgdata"
  bindir="$(_lw_pg_bindir)" || { _lw_log "postgresql binaries not found"; return 1; }
  if [ -f "$port_file" ]; then
    port="$(cat "$port_file")"
    if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port"; then
      _lw_log "postgres already running on 127.0.0.1:$port"
      export LOOPWRIGHT_TEST_POSTGRES_URL="postgresql://loopwright@127.0.0.1:$port/loopwright_test"
      return 0
    fi
  fi
  port="$(_lw_free_port)"
  mkdir -p "$LW_SVC_DIR"
  if [ "$(id -u)" = "0" ]; then chown "$LW_SVC_USER" "$LW_SVC_DIR"; fi
  if [ ! -f "$data/PG_VERSION" ]; then
    rm -rf "$data"
    _lw_as_user "'$bindir/initdb' -D '$data' -U loopwright --auth=trust -E UTF8 --no-sync >/dev/null"
  fi
  rm -f "$data/postmaster.pid"
  _lw_as_user "'$bindir/pg_ctl' -D '$data' -l '$LW_SVC_DIR/postgres.log' -w -t 60 \
    -o \"-k /tmp -p $port -h 127.0.0.1 -c fsync=off -c max_connections=200\" start >/dev/null"
  local i
  for i in $(seq 1 100); do
    if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port"; then break; fi
    sleep 0.1
  done
  "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" || { _lw_log "postgres did not start"; return 1; }
  if ! psql -h 127.0.0.1 -p "$port" -U loopwright -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname='loopwright_test'" | grep -q 1; then
    psql -h 127.0.0.1 -p "$port" -U loopwright -d postgres -qc "CREATE DATABASE loopwright_test" >&2
  fi
  echo "$port" >"$port_file"
  _lw_log "postgres started on 127.0.0.1:$port"
  export LOOPWRIGHT_TEST_POSTGRES_URL="postgresql://loopwright@127.0.0.1:$port/loopwright_test"
}

lw_services_stop() {
  local bindir
  if [ -f "$LW_SVC_DIR/redis/redis.pid" ]; then kill "$(cat "$LW_SVC_DIR/redis/redis.pid")" 2>/dev/null || true; fi
  if bindir="$(_lw_pg_bindir)" && [ -f "$LW_SVC_DIR/pgdata/PG_VERSION" ]; then
    _lw_as_user "'$bindir/pg_ctl' -D '$LW_SVC_DIR/pgdata' -m fast stop >/dev/null" || true
  fi
  rm -f "$LW_SVC_DIR/redis.port" "$LW_SVC_DIR/postgres.port"
}

lw_services_start() {
  mkdir -p "$LW_SVC_DIR"
  LW_SVC_USER="${LOOPWRIGHT_SERVICES_USER:-}"
  if [ -z "$LW_SVC_USER" ]; then
    if [ "$(id -u)" = "0" ]; then
      LW_SVC_USER=postgres
    else
      LW_SVC_USER="$(id -un)"
    fi
  fi
  _lw_install_packages || return 1
  if [ "$(id -u)" = "0" ] && ! id "$LW_SVC_USER" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$LW_SVC_USER"
  fi
  _lw_start_redis || return 1
  _lw_start_postgres || return 1
  bash "$LW_CI_DIR/install-node-tools.sh" >&2 || return 1
  bash "$LW_CI_DIR/install-chromium.sh" >&2 || return 1
  bash "$LW_CI_DIR/install-sandbox.sh" >&2 || return 1
  bash "$LW_CI_DIR/install-offline-models.sh" >&2 || return 1
  _lw_log "LOOPWRIGHT_TEST_REDIS_URL=$LOOPWRIGHT_TEST_REDIS_URL"
  _lw_log "LOOPWRIGHT_TEST_POSTGRES_URL=$LOOPWRIGHT_TEST_POSTGRES_URL"
}

lw_services_start
