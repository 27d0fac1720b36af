#!/usr/bin/env bash
# `make test`: the whole suite in two phases, arguments (`make test ARGS='-k wire'`) passed to both.
#   1. every test that measures nothing, three at a time on the two cores (pytest-xdist; most of a test waits on a
#      window, a build or a cluster start, which a third worker fills; a module goes to one worker whole, and
#      tests/conftest.py TOGETHER keeps the network-namespace modules, and the real-stack ones, on one worker);
#   2. the tests whose assertion reads a measured time, rate or order (tests/conftest.py SERIAL), alone.
# Both phases copy their managed clusters from one template folder (db/template.py), removed at the end unless
# PGARENA_TEMPLATE_PGDATA was set by the caller. Exit status: the first phase's failure, else the second's; a
# phase that selects no test (exit 5) counts as passed unless neither selected any.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ -z "${PGARENA_TEMPLATE_PGDATA+set}" ]; then
  PGARENA_TEMPLATE_PGDATA="$(mktemp -d -t pgarena-test-templates.XXXXXX)"
  export PGARENA_TEMPLATE_PGDATA
  trap 'rm -rf "$PGARENA_TEMPLATE_PGDATA"' EXIT
fi

workers="${PGARENA_TEST_WORKERS:-3}"
started=$(date +%s)
echo "== phase 1 of 2: the tests that measure nothing, $workers at a time"
.venv/bin/python -m pytest -q -ra --durations=15 -n "$workers" -m "not serial" "$@"
first=$?
echo "== phase 2 of 2: the tests that read a measured time, rate or order, alone"
.venv/bin/python -m pytest -q -ra --durations=15 -m serial "$@"
second=$?
elapsed=$(( $(date +%s) - started ))
printf '== make test: %d min %02d s in all (phase 1 exit %d, phase 2 exit %d)\n' \
  $(( elapsed / 60 )) $(( elapsed % 60 )) "$first" "$second"

[ "$first" -eq 5 ] && [ "$second" -eq 5 ] && exit 5
[ "$first" -ne 0 ] && [ "$first" -ne 5 ] && exit "$first"
[ "$second" -ne 0 ] && [ "$second" -ne 5 ] && exit "$second"
exit 0
