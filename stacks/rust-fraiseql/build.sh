#!/bin/sh
# Build step of the rust-fraiseql stack (stack.toml [build]), run in the stack's folder.
#
# 1. FraiseQL's CLI with its server linked in (`fraiseql run`) and the REST transport, from crates.io,
#    installed once into pgarena's tool cache the way pgarena installs oha (cargo install --locked: the
#    versions fraiseql 2.19.0's published Cargo.lock pins).
# 2. The schema compiled: `fraiseql compile` checks fraiseql.toml + schema.json and writes
#    schema.compiled.json (git-ignored). `fraiseql run` compiles the same files again in memory.
set -eu

FRAISEQL_VERSION=2.19.0
root="${XDG_CACHE_HOME:-$HOME/.cache}/pgarena/tools/fraiseql-$FRAISEQL_VERSION"

# A cold build takes about an hour on 2 cores: when pgarena gives this build less (a run's --budget does), say so
# at once with exit code 75 instead of spending the budget on a build that cannot finish (docs/contract.md).
COLD_BUILD_S=3600

if [ ! -x "$root/bin/fraiseql" ]; then
    if [ "${PGARENA_BUILD_TIMEOUT_S:-0}" -gt 0 ] && [ "$PGARENA_BUILD_TIMEOUT_S" -lt "$COLD_BUILD_S" ]; then
        echo "FraiseQL $FRAISEQL_VERSION is not in pgarena's tool cache and its cold build takes about $((COLD_BUILD_S / 60)) min," \
            "more than the $PGARENA_BUILD_TIMEOUT_S s this build may take; build it once with: pgarena verify --stacks rust-fraiseql"
        exit 75
    fi
    # NOTE: fraiseql-server's build script (build.rs) builds its Studio web UI with `npm ci`, and that
    # UI's package-lock.json pins luxen-ui 0.1.2, which the npm registry answers 404: with npm on PATH
    # the build fails. Without npm it embeds a placeholder page instead (build.rs: "The build is
    # skipped gracefully when node is not found"). So cargo runs with a PATH that holds every program
    # of the usual PATH but npm. Studio is a browser UI this stack does not serve.
    bin_dir=$(mktemp -d)
    trap 'rm -rf "$bin_dir"' EXIT
    old_ifs=$IFS
    IFS=:
    for dir in $PATH; do
        [ -d "$dir" ] || continue
        for program in "$dir"/*; do
            name=${program##*/}
            [ -e "$program" ] && [ "$name" != npm ] && [ ! -e "$bin_dir/$name" ] && ln -s "$program" "$bin_dir/$name"
        done
    done
    IFS=$old_ifs
    PATH="$bin_dir" cargo install fraiseql --version "$FRAISEQL_VERSION" --features cli,run-server,rest \
        --locked --root "$root"
fi

"$root/bin/fraiseql" compile fraiseql.toml -o schema.compiled.json
