# wt — writer governance for git worktrees. See README.md.
SHELL   := /bin/bash
GO      ?= go
# PREFIX defaults to /usr/local where this user may write there (root), else
# to ~/.local (a non-root user needs no sudo); install says where, and how to
# put it on PATH when it is not.
PREFIX  ?= $(shell if [ -w /usr/local/bin ] || { [ ! -e /usr/local/bin ] && [ -w /usr/local ]; }; then echo /usr/local; else echo "$$HOME/.local"; fi)
BINDIR  ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
BINS    := wt-exec wt-hook wt-gate wt-admin wt-fleet
BENCHCOUNT ?= 5
# benchstat (golang.org/x/perf) prints each benchmark's median, its own
# metrics (ReportMetric) included, with a confidence interval.
BENCHSTAT_VERSION ?= v0.0.0-20260908200009-22c9c6c9d4da
# Commits per variant in each run of BenchmarkCommitHooks: a second of them
# is about ten, too few for a median to settle on a shared machine.
COMMITS ?= 60
# CGO_ENABLED=0 makes static binaries: no dynamic loader at every start
# (about 1 ms). urfave_cli_no_docs drops urfave/cli's man-page and markdown generators
# (and their markdown library, whose init costs ~0.9 ms at every start);
# grpcnotrace keeps gRPC's request tracing (golang.org/x/net/trace and
# html/template) out of wt-fleet: 1 MB and about 0.15 ms of its start.
TAGS    ?= urfave_cli_no_docs,grpcnotrace
# The version every binary reports (--version, wt-admin version): git
# describe of this checkout; a build without make falls back to what the Go
# toolchain records (module version, or VCS revision and dirty flag).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -X github.com/wt-tool/wt/cmd/internal/textout.stamped=$(VERSION)

.PHONY: all build docs install package demo test test-newer-git lint bench fuzz interop tutorial cover clean

all: build

build:
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(TAGS) -ldflags '$(LDFLAGS)' -o bin/ ./cmd/wt-exec ./cmd/wt-hook ./cmd/wt-gate ./cmd/wt-admin ./cmd/wt-fleet

# Man pages and shell completions, made from the command-line definitions
# by a generator built without urfave_cli_no_docs (the binaries keep their
# fast start).
docs:
	@echo "docs: building the man-page and completion generator (a line per package built; a minute or two on a cold build cache)"
	@mkdir -p bin/tools
	@$(GO) build -v -tags wt_gendocs -o bin/tools/gendocs ./cmd/internal/gendocs 2>&1 | sed -u 's/^/docs:   built /'
	bin/tools/gendocs build/docs

# .deb and .rpm packages into dist/, made by nfpm (installed into
# bin/tools with go install if missing, at the version below).
NFPM_VERSION ?= v2.45.2
PKG_VERSION ?= $(shell sh scripts/pkgversion.sh)
NFPM = $(CURDIR)/bin/tools/nfpm

$(NFPM):
	GOBIN=$(CURDIR)/bin/tools $(GO) install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)

package: build docs $(NFPM)
	@mkdir -p dist
	PKG_VERSION='$(PKG_VERSION)' $(NFPM) pkg --packager deb --target dist/
	PKG_VERSION='$(PKG_VERSION)' $(NFPM) pkg --packager rpm --target dist/

install: build docs
	@install -d "$(DESTDIR)$(BINDIR)" 2>/dev/null && [ -w "$(DESTDIR)$(BINDIR)" ] || { \
		echo "make install: cannot write $(DESTDIR)$(BINDIR)" >&2; \
		echo "hint: make install PREFIX=\$$HOME/.local   (or run it as root for /usr/local)" >&2; exit 1; }
	install -m 0755 $(addprefix bin/,$(BINS)) "$(DESTDIR)$(BINDIR)/"
	install -d "$(DESTDIR)$(DATADIR)/man/man1" "$(DESTDIR)$(DATADIR)/bash-completion/completions" \
		"$(DESTDIR)$(DATADIR)/zsh/site-functions" "$(DESTDIR)$(DATADIR)/fish/vendor_completions.d"
	install -m 0644 build/docs/man/man1/*.1 "$(DESTDIR)$(DATADIR)/man/man1/"
	install -m 0644 build/docs/completions/bash/* "$(DESTDIR)$(DATADIR)/bash-completion/completions/"
	install -m 0644 build/docs/completions/zsh/_* "$(DESTDIR)$(DATADIR)/zsh/site-functions/"
	install -m 0644 build/docs/completions/fish/*.fish "$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/"
	@echo "installed $(BINS) into $(DESTDIR)$(BINDIR)"
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; *) echo "note: $(BINDIR) is not on your PATH; add it: export PATH=\"$(BINDIR):\$$PATH\"";; esac

# Builds, installs into $(PREFIX) (/usr/local for root, else ~/.local), and
# runs a short real demonstration on a temporary repository.
demo: install
	PATH="$(DESTDIR)$(BINDIR):$$PATH" bash scripts/demo.sh

# -timeout: the end-to-end package runs real processes under the race
# detector for a minute or two; go test's default 10-minute limit is kept
# far away for a slow day. go test alone prints nothing until a package is
# done: scripts/testprogress turns its -json stream into a line for every
# test as it ends, the whole output of what failed, and a summary.
test:
	@echo "test: building every package (a line per package built: none with a warm build cache, a few minutes of them on a cold one)"
	@set -o pipefail; $(GO) build -v $$($(GO) list -f '{{if and (ne .Name "main") .GoFiles}}{{.ImportPath}}{{end}}' ./...) 2>&1 | sed -u 's/^/test:   built /'
	@echo "test: go vet ./..."
	$(GO) vet ./...
	@echo "test: go test -race ./... (about two and a half minutes warm; a line per test as it ends, then the counts)"
	@# -parallel 8: many end-to-end tests spend their time waiting for an
	@# event (an etcd TTL to run out, a lease to be let go); with the default
	@# (GOMAXPROCS, 2 here) each wait held one of only two slots. -p 4: the
	@# end-to-end package holds one package slot for the whole run, and the
	@# unit packages (their race-built binaries linked one by one) took the
	@# other past its end: measured with every test run again, 3m51s with
	@# the default, 3m14s with -p 4.
	set -o pipefail; $(GO) test -race -p 4 -parallel 8 -timeout 30m -json ./... | $(GO) run ./scripts/testprogress

# The end-to-end scripts and the gate's tests again under a newer git
# (2.55, built from Debian's source package by scripts/git-newer.sh into
# ~/.cache/wt-git, once per machine), once with each ref backend: git 2.55
# shows hooks more of what they judge (symbolic-ref updates), runs hooks
# defined in configuration, and makes reftable repositories. .ci/run runs
# it after make test.
test-newer-git:
	@echo "test-newer-git: building or finding git 2.55 (scripts/git-newer.sh: a minute or two the first time on a machine)"
	@gitbin=$$(bash scripts/git-newer.sh) && dir=$$(dirname "$$gitbin") && set -o pipefail && \
	for fmt in files reftable; do \
		echo "test-newer-git: $$("$$gitbin" version), the $$fmt ref backend: the end-to-end scripts, the gate's tests, refs, hooks and the unit tests that make repositories (a minute or two)"; \
		{ PATH="$$dir:$$PATH" WT_TEST_GIT_NEWER="$$gitbin" WT_TEST_REF_FORMAT=$$fmt GIT_DEFAULT_REF_FORMAT=$$fmt \
			$(GO) test -race -timeout 30m -json -run 'TestScripts|TestGate' ./cmd/internal/e2e/ && \
		  PATH="$$dir:$$PATH" WT_TEST_GIT_NEWER="$$gitbin" WT_TEST_REF_FORMAT=$$fmt GIT_DEFAULT_REF_FORMAT=$$fmt \
			$(GO) test -race -timeout 30m -json ./core/gitrepo/... ./install/ ./hooks/ ./core/alloc/ ./core/view/ ./core/maint/ ./core/policy/ ./core/ledger/ ./wrapper/...; } | $(GO) run ./scripts/testprogress || exit 1; \
	done

# The reviewers' tools, at pinned versions, installed into bin/tools once:
# staticcheck (honnef.co/go/tools v0.8.2 is its 2026.2.2) and deadcode
# (golang.org/x/tools), whose -test run must find nothing unreachable.
STATICCHECK_VERSION ?= v0.8.2
GOCYCLO_VERSION ?= v0.6.0
DEADCODE_VERSION    ?= v0.52.0
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@test -x bin/tools/staticcheck-$(STATICCHECK_VERSION) || { echo "lint: installing staticcheck $(STATICCHECK_VERSION) into bin/tools"; \
		GOBIN=$(CURDIR)/bin/tools/.staticcheck $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && \
		mv bin/tools/.staticcheck/staticcheck bin/tools/staticcheck-$(STATICCHECK_VERSION); }
	@test -x bin/tools/deadcode-$(DEADCODE_VERSION) || { echo "lint: installing deadcode $(DEADCODE_VERSION) into bin/tools"; \
		GOBIN=$(CURDIR)/bin/tools/.deadcode $(GO) install golang.org/x/tools/cmd/deadcode@$(DEADCODE_VERSION) && \
		mv bin/tools/.deadcode/deadcode bin/tools/deadcode-$(DEADCODE_VERSION); }
	bin/tools/staticcheck-$(STATICCHECK_VERSION) ./...
	@test -x bin/tools/gocyclo-$(GOCYCLO_VERSION) || { echo "lint: installing gocyclo $(GOCYCLO_VERSION) into bin/tools"; \
		GOBIN=$(CURDIR)/bin/tools/.gocyclo $(GO) install github.com/fzipp/gocyclo/cmd/gocyclo@$(GOCYCLO_VERSION) && \
		mv bin/tools/.gocyclo/gocyclo bin/tools/gocyclo-$(GOCYCLO_VERSION); }
	bash scripts/cyclo.sh bin/tools/gocyclo-$(GOCYCLO_VERSION)
	@echo "bin/tools/deadcode-$(DEADCODE_VERSION) -test ./..."; out=$$(bin/tools/deadcode-$(DEADCODE_VERSION) -test ./...) || exit 1; \
		if [ -n "$$out" ]; then echo "$$out"; echo "lint: deadcode finds code nothing reaches, tests included: remove it"; exit 1; fi

# Benchmarks: medians come from BENCHCOUNT runs; docs/performance.md has the peers to compare with.
# -p 1: one package's benchmarks at a time (go test runs packages in parallel,
# and another package's benchmark on the second core doubled wt-exec's times).
# wt-exec is measured beside flock(1) and tini, wt-admin ps beside fuser -m
# (psmisc); they are installed if missing.
# git commit is measured beside a shell hook and lefthook (installed into
# bin/tools with go install if missing; the version BASELINE.md measured).
bench:
	@echo "bench: $(BENCHCOUNT) runs of every benchmark, one package at a time, the views on 150 worktrees and on 100,000 commits, then the commit gate under git 2.55 (about 30 minutes on 2 cores); each result line prints as it ends"
	@command -v tini >/dev/null || { echo "bench: installing tini (apt-get) for its peer benchmark"; apt-get install -y -qq tini >/dev/null 2>&1; } || echo "bench: tini is not installed; its benchmark is skipped"
	@command -v fuser >/dev/null || { echo "bench: installing psmisc (apt-get) for fuser's peer benchmark"; apt-get install -y -qq psmisc >/dev/null 2>&1; } || echo "bench: fuser (psmisc) is not installed; its benchmark is skipped"
	@command -v lefthook >/dev/null || test -x bin/tools/lefthook || { echo "bench: installing lefthook into bin/tools (go install)"; GOBIN=$(CURDIR)/bin/tools $(GO) install github.com/evilmartians/lefthook@v1.13.6; } || echo "bench: lefthook could not be installed; its benchmark is skipped"
	PATH="$(CURDIR)/bin/tools:$$PATH" $(GO) test -p 1 -run '^$$' -bench . -skip 'BenchmarkCommitHooks|BenchmarkViews|BenchmarkDoctorHistory' -benchtime 1s -count $(BENCHCOUNT) ./core/store/ ./core/proc/ ./install/ ./core/fleet/etcdfleet/ ./cmd/internal/e2e/ | tee bench.out
	@echo "bench: status and doctor on 150 worktrees (40 rounds a run), and doctor on a generated history of 100,000 commits (5 rounds a run)"
	PATH="$(CURDIR)/bin/tools:$$PATH" $(GO) test -run '^$$' -bench 'BenchmarkViews' -benchtime 40x -count $(BENCHCOUNT) ./cmd/internal/e2e/ | tee -a bench.out
	PATH="$(CURDIR)/bin/tools:$$PATH" $(GO) test -run '^$$' -bench 'BenchmarkDoctorHistory' -benchtime 5x -count $(BENCHCOUNT) ./cmd/internal/e2e/ | tee -a bench.out
	PATH="$(CURDIR)/bin/tools:$$PATH" $(GO) test -run '^$$' -bench 'BenchmarkCommitHooks' -benchtime $(COMMITS)x -count $(BENCHCOUNT) ./cmd/internal/e2e/ | tee -a bench.out
	@test -x bin/tools/benchstat || { echo "bench: installing benchstat into bin/tools (go install)"; GOBIN=$(CURDIR)/bin/tools $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION); }
	@echo "medians (benchstat): bin/tools/benchstat bench.out"
	@bin/tools/benchstat bench.out
	@echo "bench: the commit gate and the ref readers again under git 2.55 (scripts/git-newer.sh), once with each ref backend"
	@gitbin=$$(bash scripts/git-newer.sh) || { echo "bench: git 2.55 could not be built; its benchmarks are skipped"; exit 0; }; \
	dir=$$(dirname "$$gitbin"); set -o pipefail; \
	for fmt in files reftable; do \
		echo "bench: $$("$$gitbin" version), the $$fmt ref backend"; \
		PATH="$$dir:$(CURDIR)/bin/tools:$$PATH" WT_TEST_GIT_NEWER="$$gitbin" GIT_DEFAULT_REF_FORMAT=$$fmt \
			$(GO) test -run '^$$' -bench 'BenchmarkCommitHooks' -benchtime $(COMMITS)x -count $(BENCHCOUNT) ./cmd/internal/e2e/ | tee bench-git-newer-$$fmt.out || exit 1; \
		echo "medians (benchstat): bin/tools/benchstat bench-git-newer-$$fmt.out"; bin/tools/benchstat bench-git-newer-$$fmt.out; \
	done; \
	PATH="$$dir:$$PATH" WT_TEST_GIT_NEWER="$$gitbin" $(GO) test -run '^$$' -bench 'BenchmarkReadBranch' -count $(BENCHCOUNT) ./core/gitrepo/ | tee bench-refs.out && \
	bin/tools/benchstat bench-refs.out

# The unit-test coverage of every package, as CONTRIBUTING.md's table
# (scripts/coverage.sh; about 45 s).
cover:
	bash scripts/coverage.sh

# docs/tutorial.md, run as written on a scratch home (scripts/tutorial.sh):
# husky from npm, so it needs the network and is not part of make test;
# .ci/run runs it. About 45 s on 2 cores with warm caches.
tutorial:
	bash scripts/tutorial.sh

# wt with the real agent CLIs (npm) and hook managers (npm, apt, the Go
# proxy), installed into bin/tools: needs the network, so never part of
# make test. interop/run.sh says what it checks; INTEROP_LATEST=1 takes the
# newest releases instead of the versions last tried.
interop:
	bash interop/run.sh

# Short fuzzing of the parsers (their seed corpora run in every make test).
fuzz:
	@echo "fuzz: 30 s for each of the parsers' fuzzers"
	$(GO) test -run '^$$' -fuzz FuzzParseStat -fuzztime 30s ./core/proc/
	$(GO) test -run '^$$' -fuzz FuzzDecodeRuntimeBinding -fuzztime 30s ./core/proc/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 30s ./core/strictjson/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeAsEncodingJSON$$' -fuzztime 30s ./core/strictjson/
	$(GO) test -run '^$$' -fuzz '^FuzzMarshal$$' -fuzztime 30s ./core/strictjson/
	$(GO) test -run '^$$' -fuzz FuzzGeneratedDecoders -fuzztime 30s ./core/store/
	$(GO) test -run '^$$' -fuzz FuzzHookStdin -fuzztime 30s ./hooks/

clean:
	rm -rf bin build dist bench.out bench-git-newer-*.out bench-refs.out
