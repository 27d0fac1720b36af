#!/usr/bin/env bash
# python-fastapi-psycopg-async behind pgbouncer 1.18 in transaction pooling.
#
# Writes pgbouncer.ini + userlist.txt into a private temporary folder, starts pgbouncer in the
# foreground (no -d) on a free 127.0.0.1 port with at most PGARENA_POOL_SIZE server connections,
# waits until it listens, then starts uvicorn with PGARENA_DATABASE_URL pointing at pgbouncer.
# Both stay children of this script (one process tree and process group, so pgarena counts their
# CPU and stops them together); on SIGTERM/SIGINT, or when either one ends, the other is stopped
# and the folder removed.
set -euo pipefail

: "${PGARENA_HOST:?}" "${PGARENA_PORT:?}" "${PGARENA_WORKERS:?}" "${PGARENA_POOL_SIZE:?}"
: "${PGARENA_DB_HOST:?}" "${PGARENA_DB_PORT:?}" "${PGARENA_DB_USER:?}" "${PGARENA_DB_PASSWORD?}" "${PGARENA_DB_NAME:?}"

umask 077
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/pgarena-pgbouncer.XXXXXX")
as_postgres=()
if [ "$(id -u)" -eq 0 ]; then
    # pgbouncer refuses to run as root: run it as the postgres OS user, which owns the folder.
    # setpriv execs pgbouncer itself (runuser would stay in between as one more process).
    chown postgres: "$run_dir"
    as_postgres=(setpriv --reuid=postgres --regid=postgres --init-groups --)
fi

bouncer_pid=
app_pid=
cleanup() {
    trap '' TERM INT   # pgarena signals the group and every process; finish the cleanup regardless
    trap - EXIT
    [ -z "$app_pid" ] || kill -TERM "$app_pid" 2>/dev/null || true
    [ -z "$bouncer_pid" ] || kill -TERM "$bouncer_pid" 2>/dev/null || true   # SIGTERM: immediate shutdown
    wait || true
    rm -rf "$run_dir"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# pgbouncer's auth_file format: "user" "password", double quotes inside doubled.
dq() { printf '"%s"' "${1//\"/\"\"}"; }
printf '%s %s\n' "$(dq "$PGARENA_DB_USER")" "$(dq "$PGARENA_DB_PASSWORD")" > "$run_dir/userlist.txt"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_pgbouncer() {
    local port=$1
    cat > "$run_dir/pgbouncer.ini" <<INI
[databases]
$PGARENA_DB_NAME = host=$PGARENA_DB_HOST port=$PGARENA_DB_PORT dbname=$PGARENA_DB_NAME

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $run_dir/userlist.txt
pool_mode = transaction
default_pool_size = $PGARENA_POOL_SIZE
max_db_connections = $PGARENA_POOL_SIZE
reserve_pool_size = 0
max_client_conn = $((PGARENA_POOL_SIZE + 100))
log_connections = 0
log_disconnections = 0
log_stats = 0
INI
    [ "$(id -u)" -ne 0 ] || chown postgres: "$run_dir"/*
    "${as_postgres[@]}" pgbouncer "$run_dir/pgbouncer.ini" &
    bouncer_pid=$!
    for _ in $(seq 100); do
        listening "$port" && return 0
        if ! kill -0 "$bouncer_pid" 2>/dev/null; then   # e.g. lost the port to another process
            wait "$bouncer_pid" || true
            bouncer_pid=
            return 1
        fi
        sleep 0.05
    done
    echo "run.sh: pgbouncer did not listen on 127.0.0.1:$port within 5 s" >&2
    exit 1
}

bouncer_port=
for _ in 1 2 3 4 5; do
    port=$(free_port)
    if start_pgbouncer "$port"; then bouncer_port=$port; break; fi
done
[ -n "$bouncer_port" ] || { echo "run.sh: could not start pgbouncer" >&2; exit 1; }
echo "run.sh: pgbouncer on 127.0.0.1:$bouncer_port -> $PGARENA_DB_HOST:$PGARENA_DB_PORT, transaction pooling, at most $PGARENA_POOL_SIZE server connections"

urlquote() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
export PGARENA_DATABASE_URL="postgresql://$(urlquote "$PGARENA_DB_USER"):$(urlquote "$PGARENA_DB_PASSWORD")@127.0.0.1:$bouncer_port/$(urlquote "$PGARENA_DB_NAME")"
PYTHONPATH=../python-fastapi-psycopg-async${PYTHONPATH:+:$PYTHONPATH} \
    .venv/bin/uvicorn bouncer:app --host "$PGARENA_HOST" --port "$PGARENA_PORT" --workers "$PGARENA_WORKERS" \
    --loop uvloop --http httptools --no-access-log --timeout-graceful-shutdown 5 &
app_pid=$!

# Whichever ends first, the other is stopped (cleanup, via the EXIT trap).
status=0
wait -n "$app_pid" "$bouncer_pid" || status=$?
exit "$status"
