#!/bin/sh
# A known regression for `pgarena ab` (issue 24's acceptance): a copy of go-nethttp-pgx whose every request first
# spins the CPU for a fixed time (default 200 µs, wall clock measured by the Go runtime's monotonic clock).
#
#   sh examples/ab/spin-variant.sh /tmp/go-nethttp-pgx-200us 200
#   pgarena ab go-nethttp-pgx --base current --head /tmp/go-nethttp-pgx-200us --fail-on-regression 5% ...
#
# The copy keeps the stack's id-independent files (main.go, go.mod, go.sum, stack.toml); `pgarena ab` gives each
# side an id of its own. Only Handler: mux changes to Handler: spin(mux).
set -eu
out=${1:?usage: spin-variant.sh OUT_DIR [MICROSECONDS]}
us=${2:-200}
here=$(cd "$(dirname "$0")/../.." && pwd)
src="$here/stacks/go-nethttp-pgx"
rm -rf "$out"
mkdir -p "$out"
cp "$src/main.go" "$src/go.mod" "$src/go.sum" "$src/stack.toml" "$out/"
grep -q '		Handler:           mux,' "$out/main.go" || { echo "spin-variant: main.go has no 'Handler: mux' line" >&2; exit 2; }
sed -i 's/^		Handler:           mux,$/		Handler:           spin(mux),/' "$out/main.go"
cat >> "$out/main.go" <<GO

// spin burns ${us} µs of CPU before every request: a known regression for an A/B (examples/ab/spin-variant.sh).
func spin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for start := time.Now(); time.Since(start) < ${us}*time.Microsecond; {
		}
		next.ServeHTTP(w, r)
	})
}
GO
echo "spin-variant: $out (go-nethttp-pgx + ${us} µs of CPU per request)"
