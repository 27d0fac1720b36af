#!/usr/bin/env bash
# go-nethttp-pgx behind pgbouncer in transaction pooling.
#
# Writes pgbouncer.ini and userlist.txt into a private temporary folder, starts pgbouncer in the
# foreground on a free 127.0.0.1 port (pool_mode = transaction, at most PGARENA_POOL_SIZE server
# connections), waits until it accepts connections, then starts the parent's Go server (built into
# ./bin) with PGARENA_DATABASE_URL pointing at pgbouncer. Both stay children of this script (one
# process tree, one process group); when either ends, or on SIGTERM/SIGINT, the other is stopped.
set -euo pipefail

: "${PGARENA_DB_HOST:?}" "${PGARENA_DB_PORT:?}" "${PGARENA_DB_USER:?}" "${PGARENA_DB_PASSWORD?}" "${PGARENA_DB_NAME:?}"
pool_size=${PGARENA_POOL_SIZE:-10}
# pgx exec mode through pgbouncer (see stack.toml's notes): the extended protocol on the unnamed
# statement, no named prepared statements, so it is safe with transaction pooling.
exec_mode=${PGX_EXEC_MODE:-exec}

umask 077
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/pgarena-pgbouncer.XXXXXX")
as_postgres=()
if [ "$(id -u)" -eq 0 ]; then
    # pgbouncer refuses to run as root. setpriv execs pgbouncer directly as postgres (runuser would
    # fork and stay in between, delaying signals by its own 2 s kill timeout).
    chown postgres: "$run_dir"
    as_postgres=(setpriv --reuid=postgres --regid=postgres --init-groups --)
fi

bouncer_pid=
server_pid=
cleanup() {
    # Ignore further signals (pgarena sends SIGTERM to the group and to each process) so that the
    # folder is removed even when a second one arrives.
    trap '' TERM INT
    trap - EXIT
    [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null || true
    [ -n "$bouncer_pid" ] && kill -TERM "$bouncer_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$run_dir"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# "name" "secret" with embedded double quotes doubled, as pgbouncer's auth_file wants.
quote_userlist() { printf '"%s"' "${1//\"/\"\"}"; }
# A libpq keyword/value: single quotes, backslash and quote escaped.
quote_kv() { local v=${1//\\/\\\\}; printf "'%s'" "${v//\'/\\\'}"; }

{ quote_userlist "$PGARENA_DB_USER"; printf ' '; quote_userlist "$PGARENA_DB_PASSWORD"; printf '\n'; } > "$run_dir/userlist.txt"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_pgbouncer() {
    local port=$1
    cat > "$run_dir/pgbouncer.ini" <<INI
[databases]
* = host=$PGARENA_DB_HOST port=$PGARENA_DB_PORT

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $run_dir/userlist.txt
pool_mode = transaction
default_pool_size = $pool_size
max_db_connections = $pool_size
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = $((pool_size + 100))
server_login_retry = 1
log_connections = 0
log_disconnections = 0
log_stats = 0
INI
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$run_dir"/*; fi
    "${as_postgres[@]}" pgbouncer "$run_dir/pgbouncer.ini" &
    bouncer_pid=$!
    for _ in $(seq 100); do
        listening "$port" && return 0
        kill -0 "$bouncer_pid" 2>/dev/null || { wait "$bouncer_pid" || true; bouncer_pid=; return 1; }
        sleep 0.05
    done
    echo "run.sh: pgbouncer did not listen on 127.0.0.1:$port within 5 s" >&2
    exit 1
}

bouncer_port=
for _ in $(seq 20); do
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    port_free "$port" || continue
    if start_pgbouncer "$port"; then bouncer_port=$port; break; fi   # lost a race for the port: retry
done
[ -n "$bouncer_port" ] || { echo "run.sh: could not start pgbouncer" >&2; exit 1; }
echo "run.sh: pgbouncer $bouncer_port -> $PGARENA_DB_HOST:$PGARENA_DB_PORT (transaction pooling, $pool_size server connections); pgx exec mode $exec_mode"

PGARENA_DATABASE_URL="host=127.0.0.1 port=$bouncer_port user=$(quote_kv "$PGARENA_DB_USER") password=$(quote_kv "$PGARENA_DB_PASSWORD") dbname=$(quote_kv "$PGARENA_DB_NAME") default_query_exec_mode=$exec_mode" \
    ./bin/server &
server_pid=$!

# Whichever ends first, stop the other (cleanup, via the EXIT trap) and exit with its status.
status=0
wait -n "$server_pid" "$bouncer_pid" || status=$?
exit "$status"
