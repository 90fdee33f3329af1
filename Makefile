# replyflow: `make dev` runs everything on this machine, `make test` runs the
# tests. Both build what they need on first use. `make dev` needs only Go;
# `make test` also needs a C compiler, PostgreSQL and Chromium (for the web
# chat page's browser test), which it checks first and, for Chromium,
# installs from Debian's packages when it runs as root
# (cmd/internal/prereqs/test-prereqs.sh; docs/getting-started.md says how to get them).

# Every go command below runs on this Go release, whatever Go is installed:
# the go command fetches it from the module proxy on first use. A machine
# with GOTOOLCHAIN=local (as Go's container images set) would otherwise
# build with its own, older standard library, as it ignores go.mod's
# toolchain line (which names this release for everyone else);
# `make test GOTOOLCHAIN=...` overrides it.
export GOTOOLCHAIN := go1.27.3

TEMPORAL_CLI_VERSION := v1.5.1
BIN := $(CURDIR)/bin
# Tools in bin/ are rebuilt when GOTOOLCHAIN changes, so none keeps the
# standard library of the Go that built it before.
TOOLCHAIN_STAMP := $(BIN)/.built-with-$(GOTOOLCHAIN)
# GOTOOLCHAIN switches the go command only: the gofmt on PATH is the
# installed Go's, so this one is GOTOOLCHAIN's.
GOFMT = "$$(go env GOROOT)/bin/gofmt"
TEMPORAL := $(BIN)/temporal
# The real Temporal server and its SQL tool, for the cluster on
# PostgreSQL (make cluster, the cluster tests, make bench -cluster): the
# version the CLI's dev server embeds.
TEMPORAL_SERVER_VERSION := v1.29.1
TEMPORAL_SERVER := $(BIN)/temporal-server
TEMPORAL_SQL_TOOL := $(BIN)/temporal-sql-tool
WORKFLOWCHECK_VERSION := v0.6.0
WORKFLOWCHECK := $(BIN)/workflowcheck
# govulncheck, and the Go vulnerability database it reads: the pinned
# golang.org/x/vulndb module's OSV entries, indexed once into bin/, so the
# check is offline and fails only when the code or the pinned database
# changes. Move VULNDB_VERSION to a newer pseudo-version to learn of newer
# vulnerabilities (go list -m golang.org/x/vulndb@latest).
GOVULNCHECK_VERSION := v1.9.0
GOVULNCHECK := $(BIN)/govulncheck
VULNDB_VERSION := v0.0.0-20261105234957-e22db6528018
VULNDB := $(BIN)/vulndb-$(VULNDB_VERSION)
# promtool, Prometheus's rule checker, for the alert rules' tests
# (deploy/prometheus/alerts_test.yaml). Its Go module's v0.316.0 is
# Prometheus v3.16.0. Built without the service discoveries, which rule
# tests do not use and which are most of its build.
PROMTOOL_VERSION := v0.316.0
PROMTOOL := $(BIN)/promtool
GO_TEST_FLAGS ?= -race -count=1 -timeout 20m

.PHONY: dev build test unit prereqs vet workflowcheck vulncheck alertrules fmt record-histories fuzz bench chaos cluster clean

dev: build $(TEMPORAL)
	$(BIN)/replyflow dev

build:
	go build -o $(BIN)/replyflow ./cmd/replyflow

# The Temporal CLI (dev server and Web UI) is built from the Go module proxy;
# newer tags do not build outside their own repository.
$(TEMPORAL): $(TOOLCHAIN_STAMP)
	@echo "==> building the Temporal CLI $(TEMPORAL_CLI_VERSION) into bin/ (first run only: about 5 minutes)"
	GOBIN=$(BIN) go install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION)
	touch $@

# go install names a binary for its folder (server, sql), so each is built
# into a folder of its own and moved to its name in bin/.
$(TEMPORAL_SERVER): $(TOOLCHAIN_STAMP)
	@echo "==> building the Temporal server $(TEMPORAL_SERVER_VERSION) into bin/ (first run only: about 3 minutes)"
	rm -rf $(BIN)/.server && GOBIN=$(BIN)/.server go install go.temporal.io/server/cmd/server@$(TEMPORAL_SERVER_VERSION)
	mv $(BIN)/.server/server $@ && rm -rf $(BIN)/.server && touch $@

$(TEMPORAL_SQL_TOOL): $(TOOLCHAIN_STAMP)
	rm -rf $(BIN)/.sqltool && GOBIN=$(BIN)/.sqltool go install go.temporal.io/server/cmd/tools/sql@$(TEMPORAL_SERVER_VERSION)
	mv $(BIN)/.sqltool/sql $@ && rm -rf $(BIN)/.sqltool && touch $@

# go install leaves a binary that is already up to date untouched, so each
# rule above touches its target to stay newer than the stamp.
$(TOOLCHAIN_STAMP):
	mkdir -p $(BIN) && rm -f $(BIN)/.built-with-* && touch $@

# The prerequisites are checked, in this order, before anything is
# downloaded or built; a cold machine then spends most of half an hour on
# the modules and the Temporal CLI, and each step says so.
test: prereqs vet workflowcheck vulncheck alertrules $(TEMPORAL) $(TEMPORAL_SERVER) $(TEMPORAL_SQL_TOOL)
	@echo "==> running every test with the race detector (the first build of the tests takes minutes; cmd/replyflow and the chaos runs take several more)"
	REPLYFLOW_TEST_TEMPORAL_CLI=$(TEMPORAL) REPLYFLOW_TEST_TEMPORAL_SERVER=$(TEMPORAL_SERVER) REPLYFLOW_TEST_TEMPORAL_SQL_TOOL=$(TEMPORAL_SQL_TOOL) \
		go test $(GO_TEST_FLAGS) ./...
	@$(POSTGRES_SKIPPED)

# Everything that needs no Temporal server.
unit: prereqs vet workflowcheck vulncheck alertrules
	@echo "==> running the tests that need no Temporal server, with the race detector"
	go test $(GO_TEST_FLAGS) $$(go list ./... | grep -v /cmd/)
	@$(POSTGRES_SKIPPED)

# Go, a C compiler for -race, PostgreSQL unless REPLYFLOW_TEST_POSTGRES=off,
# and Chromium unless REPLYFLOW_TEST_BROWSER=off (installed when missing).
prereqs:
	@cmd/internal/prereqs/test-prereqs.sh
	@echo "==> downloading the Go modules if needed (first run only: several minutes)"
	@go mod download

POSTGRES_SKIPPED = if [ "$${REPLYFLOW_TEST_POSTGRES:-}" = off ]; then echo "** REPLYFLOW_TEST_POSTGRES=off: the PostgreSQL store suites were SKIPPED in this run."; fi

vet:
	@echo "==> gofmt and go vet"
	@unformatted=$$($(GOFMT) -l .) || exit 1; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	go vet ./...

# The Temporal SDK's static determinism checker, over the workflow code:
# time.Now, goroutines, map iteration and the like fail the build.
# workflows/workflowcheck.yaml lists its proven false positives, each with its proof.
$(WORKFLOWCHECK): $(TOOLCHAIN_STAMP)
	GOBIN=$(BIN) go install go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)
	touch $@

workflowcheck: $(WORKFLOWCHECK)
	$(WORKFLOWCHECK) -config workflows/workflowcheck.yaml ./workflows/...

# Known vulnerabilities that the code can reach, in the standard library
# (fixed by moving GOTOOLCHAIN and go.mod's toolchain line to the patched release)
# or in a module (fixed by moving that module). Vulnerabilities in modules
# whose vulnerable code is never called are listed and do not fail.
$(GOVULNCHECK): $(TOOLCHAIN_STAMP)
	GOBIN=$(BIN) go install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)
	touch $@

# The module holds the database's OSV entries (data/osv); its indexdb
# command writes the index/ and ID/ files that govulncheck -db file:// reads.
# Written to a temporary folder and renamed, so a run stopped halfway
# leaves no partial database behind.
$(VULNDB)/index/db.json:
	@echo "==> indexing the Go vulnerability database $(VULNDB_VERSION) into bin/ (first run only: about 2 minutes)"
	rm -rf $(BIN)/vulndb-* && mkdir -p $(BIN)
	go mod download golang.org/x/vulndb@$(VULNDB_VERSION)
	go run golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION) \
		-vulns "$$(go env GOMODCACHE)/golang.org/x/vulndb@$(VULNDB_VERSION)/data/osv" -out $(VULNDB).partial
	mv $(VULNDB).partial $(VULNDB)

vulncheck: $(GOVULNCHECK) $(VULNDB)/index/db.json
	@echo "==> govulncheck against the Go vulnerability database $(VULNDB_VERSION), with $$(go env GOVERSION)"
	$(GOVULNCHECK) -db file://$(VULNDB) ./...

$(PROMTOOL): $(TOOLCHAIN_STAMP)
	@echo "==> building promtool $(PROMTOOL_VERSION) into bin/ (first run only: about 5 minutes)"
	GOBIN=$(BIN) go install -tags remove_all_sd github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)
	touch $@

# The alert rules load as Prometheus loads them, and each alert fires in
# its test case that should and stays quiet in the one that should not.
alertrules: $(PROMTOOL)
	@echo "==> the alert rules and their tests (promtool)"
	$(PROMTOOL) check rules deploy/prometheus/alerts.yaml
	$(PROMTOOL) test rules deploy/prometheus/alerts_test.yaml

fmt:
	$(GOFMT) -w .

# Record the histories the replay test runs over (commit the new files).
# A history file that exists is never rewritten: only tests whose history
# names are new write files, so the old ones keep guarding the sessions
# recorded with older workflow code.
record-histories: $(TEMPORAL) $(TEMPORAL_SERVER) $(TEMPORAL_SQL_TOOL)
	REPLYFLOW_TEST_TEMPORAL_CLI=$(TEMPORAL) go test -count=1 ./cmd/replyflow -args -record-histories=$(CURDIR)/workflows/session/testdata/histories
	REPLYFLOW_TEST_TEMPORAL_CLI=$(TEMPORAL) REPLYFLOW_TEST_TEMPORAL_SERVER=$(TEMPORAL_SERVER) REPLYFLOW_TEST_TEMPORAL_SQL_TOOL=$(TEMPORAL_SQL_TOOL) \
		go test -count=1 ./cmd/replyflow-chaos -run TestRollingUpgrade -args -record-histories=$(CURDIR)/workflows/session/testdata/histories

# Every fuzz test (the parsers of user, platform and model input; their
# seeds also run in `make test`), FUZZTIME each. A failure leaves its
# input in the package's testdata/fuzz: commit it, and it stays a
# regression test.
FUZZTIME ?= 30s
fuzz:
	@set -e; for pkg in $$(go list ./... | grep -v /cmd/); do \
		for fn in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$fn ($$pkg) for $(FUZZTIME)"; \
			go test $$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME); \
		done; \
	done

# Measure the cost of durability (a table of figures; see
# docs/performance.md). BENCH_FLAGS passes flags, e.g. -address host:7233,
# or -cluster to measure a real Temporal cluster on PostgreSQL beside the
# dev server with one, two and three workers.
BENCH_FLAGS ?=
bench: build $(TEMPORAL) $(TEMPORAL_SERVER) $(TEMPORAL_SQL_TOOL)
	go run ./cmd/replyflow-bench -temporal $(TEMPORAL) -temporal-server $(TEMPORAL_SERVER) -sql-tool $(TEMPORAL_SQL_TOOL) -replyflow $(BIN)/replyflow $(BENCH_FLAGS)

# Kill the worker, the gateway and the Temporal server at random while
# conversations run on Telegram, Slack and Discord, then check nothing was
# lost (docs/reliability.md, "After a crash"). CHAOS_FLAGS passes flags,
# e.g. -platform=slack,discord. A short run of it is part of `make test`.
CHAOS_FLAGS ?=
chaos: build $(TEMPORAL)
	go run ./cmd/replyflow-chaos -temporal $(TEMPORAL) -replyflow $(BIN)/replyflow $(CHAOS_FLAGS)

# The same attack on a real Temporal cluster: two server nodes on
# PostgreSQL (the store there too), three workers, two gateways behind one
# balancer (Telegram in webhook mode through it); the kills hit workers,
# gateways and server nodes (docs/reliability.md, "On a real Temporal
# cluster"). It needs the PostgreSQL of `make test`
# (REPLYFLOW_TEST_POSTGRES_DSN).
CLUSTER_FLAGS ?=
cluster: build $(TEMPORAL) $(TEMPORAL_SERVER) $(TEMPORAL_SQL_TOOL)
	go run ./cmd/replyflow-chaos -cluster -temporal-server $(TEMPORAL_SERVER) -sql-tool $(TEMPORAL_SQL_TOOL) -replyflow $(BIN)/replyflow $(CLUSTER_FLAGS)

clean:
	rm -rf $(BIN)
