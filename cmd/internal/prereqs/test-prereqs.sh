#!/usr/bin/env bash
# Checks what `make test` needs before it spends minutes on downloads and
# builds: Go as new as go.mod asks, a C compiler (the race detector is built
# with cgo), unless REPLYFLOW_TEST_POSTGRES=off the PostgreSQL the store
# suites use, and unless REPLYFLOW_TEST_BROWSER=off the Chromium the web
# chat page's test drives, which it installs when it can (Debian's package,
# as root). Each missing piece is one line saying how to get it.
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

# have_chromium: is a Chromium the browser test finds there?
have_chromium() {
	if [ -n "${REPLYFLOW_TEST_CHROMIUM:-}" ]; then
		[ -x "$REPLYFLOW_TEST_CHROMIUM" ]
		return
	fi
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1
}

case "${REPLYFLOW_TEST_BROWSER:-on}" in
off)
	cat <<'BANNER'
************************************************************************
** REPLYFLOW_TEST_BROWSER=off: the web chat page's browser test is SKIPPED.
************************************************************************
BANNER
	;;
on)
	how_browser="apt-get install chromium (Debian/Ubuntu), or set REPLYFLOW_TEST_CHROMIUM to a Chromium or Chrome binary; or REPLYFLOW_TEST_BROWSER=off to skip the web chat page's browser test"
	if [ -n "${REPLYFLOW_TEST_CHROMIUM:-}" ] && ! have_chromium; then
		missing "Chromium for the web chat page's browser test, and REPLYFLOW_TEST_CHROMIUM ($REPLYFLOW_TEST_CHROMIUM) is not an executable: $how_browser"
	elif ! have_chromium; then
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
			echo "==> installing Chromium for the web chat page's browser test (apt-get install chromium; first run only: about a minute)"
			apt_log=$(mktemp)
			if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >"$apt_log" 2>&1 || ! have_chromium; then
				tail -n 5 "$apt_log" >&2
				missing "Chromium for the web chat page's browser test, and apt-get install chromium failed (above): $how_browser"
			fi
			rm -f "$apt_log"
		else
			missing "Chromium for the web chat page's browser test, and none is on PATH (chromium, chromium-browser, google-chrome): $how_browser, as root; brew install --cask chromium on macOS"
		fi
	fi
	;;
*)
	missing "REPLYFLOW_TEST_BROWSER to be unset or off (skip the web chat page's browser test), not '$REPLYFLOW_TEST_BROWSER'"
	;;
esac

if ((${#problems[@]})); then
	printf '%s\n' "${problems[@]}" >&2
	exit 1
fi
