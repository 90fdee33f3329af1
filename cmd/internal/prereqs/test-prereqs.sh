#!/usr/bin/env bash
# Checks what `make test` needs before it spends minutes on downloads and
# builds: Go as new as go.mod asks, a C compiler (the race detector is built
# with cgo) and, unless REPLYFLOW_TEST_POSTGRES=off, the PostgreSQL the
# store suites use. Each missing piece is one line saying how to get it.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1 # the repository's root

default_dsn="postgres://postgres@127.0.0.1:5432/test?sslmode=disable" # as activities/store's tests
problems=()
missing() { problems+=("make test needs $*"); }

# version_at_least A B: is dotted version A >= B?
version_at_least() {
	local IFS=.
	local -a a=($1) b=($2)
	for i in 0 1 2; do
		local x=${a[i]:-0} y=${b[i]:-0}
		if ((10#$x > 10#$y)); then return 0; fi
		if ((10#$x < 10#$y)); then return 1; fi
	done
	return 0
}

want_go=$(awk '$1 == "go" { print $2; exit }' go.mod)
if [ -z "$want_go" ]; then
	echo "test-prereqs: no go directive read from $(pwd)/go.mod" >&2
	exit 1
fi
if ! command -v go >/dev/null 2>&1; then
	missing "Go $want_go or newer, and go is not on PATH: install it from https://go.dev/dl/"
elif ! have_go=$(go env GOVERSION 2>&1); then
	missing "Go $want_go or newer; \`go env\` failed with GOTOOLCHAIN=${GOTOOLCHAIN:-} (${have_go//$'\n'/ }): the go command fetches that release from the module proxy (GOPROXY) on first use; or install Go $want_go from https://go.dev/dl/ and run make GOTOOLCHAIN=local"
else
	have_go=${have_go#go}
	have_go=${have_go%%[!0-9.]*}
	if ! version_at_least "$have_go" "$want_go"; then
		missing "Go $want_go or newer (go.mod), found $have_go with GOTOOLCHAIN=${GOTOOLCHAIN:-}: run make without setting GOTOOLCHAIN (the Makefile names the release, and the go command fetches it from the module proxy), or install Go $want_go from https://go.dev/dl/"
	fi
	cc=$(go env CC)
	cc=${cc%% *}
	if ! command -v "$cc" >/dev/null 2>&1; then
		missing "a C compiler for the race detector (cgo), and '$cc' was not found: apt-get install gcc (Debian/Ubuntu), xcode-select --install (macOS), or set CC"
	elif [ "$(go env CGO_ENABLED)" != 1 ]; then
		missing "cgo for the race detector, and CGO_ENABLED is 0: unset CGO_ENABLED"
	fi
fi

case "${REPLYFLOW_TEST_POSTGRES:-on}" in
off)
	cat <<'BANNER'
************************************************************************
** REPLYFLOW_TEST_POSTGRES=off: the PostgreSQL store suites are SKIPPED.
** This run does not test the store on PostgreSQL.
************************************************************************
BANNER
	;;
on)
	dsn=${REPLYFLOW_TEST_POSTGRES_DSN:-$default_dsn}
	# host:port from postgres://[user[:password]@]host[:port][/db][?...]
	hostport=$(printf '%s' "$dsn" | sed -E 's#^[a-z]+://([^@/]*@)?([^/?]*).*#\2#')
	host=${hostport%:*}
	port=${hostport##*:}
	if [ "$host" = "$hostport" ]; then port=5432; fi
	host=${host:-127.0.0.1}
	how="apt-get install postgresql (Debian/Ubuntu) or brew install postgresql (macOS), with a database 'test' that user postgres reaches over TCP without a password; or set REPLYFLOW_TEST_POSTGRES_DSN to your own postgres:// URL; or REPLYFLOW_TEST_POSTGRES=off to skip the PostgreSQL suites"
	connect_limit=()
	if command -v timeout >/dev/null 2>&1; then connect_limit=(timeout 5); fi
	if ! "${connect_limit[@]}" bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
		missing "PostgreSQL for the store suites, and nothing answers on $host:$port: $how"
	elif command -v psql >/dev/null 2>&1 && ! err=$(PGCONNECT_TIMEOUT=5 psql "$dsn" -Atqc 'SELECT 1' 2>&1 >/dev/null); then
		missing "PostgreSQL for the store suites at $dsn, which refused: ${err//$'\n'/ } ($how)"
	fi
	;;
*)
	missing "REPLYFLOW_TEST_POSTGRES to be unset or off (skip the PostgreSQL suites), not '$REPLYFLOW_TEST_POSTGRES'"
	;;
esac

if ((${#problems[@]})); then
	printf '%s\n' "${problems[@]}" >&2
	exit 1
fi
