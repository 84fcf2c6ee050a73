# rocectl — build, test, demo. `make help` lists the targets.
#
# `make test` is the whole test suite, and what CI runs (.ci/run): it installs
# what the tests need (Debian packages, Go modules), runs vet and staticcheck,
# the unit, fixture and namespace tests, the end-to-end tests with the built
# binary, and the Soft-RoCE lab tests in a VM.

GO       ?= go
BIN      := bin/rocectl
# The daemon is its own binary (cli/agentcmd says why); `rocectl agent`
# runs it from beside rocectl.
AGENT_BIN := bin/rocectl-agent
# Debian packages the tests use: iproute2/ethtool only as cross-checks in
# namespace tests, libibverbs-dev for the cgo verbs layer (-tags verbs),
# util-linux's setpriv for the systemd unit test, ansible-core and PyYAML
# for the Ansible role's tests, ansible-lint for its lint test, lintian for the Debian package's test,
# tmux for rocectl watch's real-terminal test,
# prometheus for `promtool check metrics` on the agent's exposition (no
# smaller Debian package ships promtool; without recommends it adds ~100 MB;
# on a host booted with systemd its postinst also enables
# prometheus.service, listening on :9090),
# strace for the benchmarks' floors (the audit's and the apply's own file
# calls, replayed by bench/cmd/auditfloor; without it they are not measured),
# chromium for the fleet report's browser test (report.TestHTMLInBrowser
# renders the HTML headless and checks the DOM; without it the test
# skips): ~124 MB to download with its libraries (chromium 81 MB,
# chromium-common 32 MB), ~360 MB installed.
DEB_PKGS := iproute2 ethtool strace gcc libc6-dev libibverbs-dev pkg-config util-linux ansible-core python3-yaml ansible-lint lintian prometheus tmux chromium
VERBS_TAGS := $(shell [ -f /usr/include/infiniband/verbs.h ] && echo verbs)

# What `rocectl version` prints. From git when this is a checkout; without
# git the binary falls back to what Go stamps (debug.ReadBuildInfo). The
# revision is passed too because Go stamps nothing in a linked git worktree.
# BUILD_DATE honours SOURCE_DATE_EPOCH (reproducible builds).
GIT_VERSION  := $(shell git describe --tags --always --dirty 2>/dev/null)
GIT_REVISION := $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE   := $(shell date -u -d "@$${SOURCE_DATE_EPOCH:-$$(date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
CLI_PKG      := github.com/rocectl/rocectl/cli
LDFLAGS      := -X $(CLI_PKG).BuildDate=$(BUILD_DATE) \
                $(if $(GIT_VERSION),-X $(CLI_PKG).Version=$(GIT_VERSION)) \
                $(if $(GIT_REVISION),-X $(CLI_PKG).Revision=$(GIT_REVISION))

.PHONY: help deps build build-verbs deb demo test test-all test-unit test-e2e race fuzz bench lint clean

help:
	@echo "make demo   - audit the shipped ConnectX recipe against a captured factory-default host (no RDMA NIC needed)"
	@echo "make test   - the whole test suite: deps, vet, lint, unit/fixture/namespace tests, end-to-end, Soft-RoCE lab (needs root)"
	@echo "make lint   - staticcheck (a tool in go.mod) over the plain, lab/verbs and test-hook builds"
	@echo "make build  - bin/rocectl and bin/rocectl-agent, the daemon (add verbs support with: make build-verbs)"
	@echo "make deb    - bin/rocectl_<version>_<arch>.deb (verbs support; Depends: libc6 (>= 2.34), libibverbs1 (>= 32))"
	@echo "make race   - the Go tests under the race detector (not in make test: about 3.5 more minutes)"
	@echo "make bench  - benchmarks, printed beside their baselines"
	@echo "make lab    - the full Soft-RoCE lab (self-test + Go lab tests)"

# deps installs what is missing, and only that.
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; 	if [ -n "$$missing" ]; then 	  echo "deps: apt-get install$$missing"; 	  export DEBIAN_FRONTEND=noninteractive; 	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; 	fi
	$(GO) mod download

# Static, no cgo: runs anywhere, but verify --loopback/--peer need verbs.
build:
	@[ -x $(BIN) ] || echo "build: $(BIN) (a first build compiles every dependency: about 2 minutes on 2 cores)..."
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rocectl
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(AGENT_BIN) ./cmd/rocectl-agent

# With verbs traffic tests (links libibverbs.so.1; needs libibverbs-dev).
build-verbs:
	CGO_ENABLED=1 $(GO) build -trimpath -tags verbs -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rocectl
	CGO_ENABLED=1 $(GO) build -trimpath -tags verbs -ldflags "$(LDFLAGS)" -o $(AGENT_BIN) ./cmd/rocectl-agent

# --- Debian package (packaging/nfpm.yaml, built with go tool nfpm) ---
# Version: v1.2.3 tag -> 1.2.3, 4 commits later -> 1.2.3+git4.gabcdef0; no
# tag -> 0.0~gitYYYYMMDD.abcdef0 (the commit's date); a dirty tree adds
# .dirty. No "-": a native package. SOURCE_DATE_EPOCH defaults to the
# commit's time, so the package's dates and the man pages' are the commit's.
DEB_DIR     ?= bin
DEB_STAGE   := $(DEB_DIR)/deb-stage
DEB_EPOCH   := $(or $(SOURCE_DATE_EPOCH),$(shell git log -1 --format=%ct 2>/dev/null),0)
DEB_VERSION ?= $(shell v=$$(git describe --tags --match 'v[0-9]*' --dirty=.dirty 2>/dev/null) && \
                 echo "$$v" | sed -e 's/^v//' -e 's/-\([0-9]*\)-g\([0-9a-f]*\)/+git\1.g\2/' || \
                 { d=$$(git log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null) && \
                   echo "0.0~git$$d.$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD 2>/dev/null || echo .dirty)"; } || \
                 echo 0.0~unknown)
DEB_ARCH    := $(shell $(GO) env GOARCH)
DEB_LDFLAGS := -s -w -X $(CLI_PKG).Version=$(DEB_VERSION) \
               -X $(CLI_PKG).BuildDate=$(shell date -u -d @$(DEB_EPOCH) +%Y-%m-%dT%H:%M:%SZ) \
               $(if $(GIT_REVISION),-X $(CLI_PKG).Revision=$(GIT_REVISION))

deb:
	rm -rf $(DEB_STAGE) && mkdir -p $(DEB_STAGE)/units $(DEB_STAGE)/examples
	CGO_ENABLED=1 $(GO) build -trimpath -buildmode=pie -tags verbs -ldflags "$(DEB_LDFLAGS)" -o $(DEB_STAGE)/rocectl ./cmd/rocectl
	CGO_ENABLED=1 $(GO) build -trimpath -buildmode=pie -tags verbs -ldflags "$(DEB_LDFLAGS)" -o $(DEB_STAGE)/rocectl-agent ./cmd/rocectl-agent
	SOURCE_DATE_EPOCH=$(DEB_EPOCH) $(GO) run ./internal/tools/gendocs -out $(DEB_STAGE) -version $(DEB_VERSION)
	@# The units name /usr/local/sbin/rocectl (a hand install); the package's is /usr/sbin.
	for u in systemd/rocectl*.service systemd/rocectl*.timer; do \
	  sed 's|/usr/local/sbin/rocectl|/usr/sbin/rocectl|g' $$u > $(DEB_STAGE)/units/$$(basename $$u); done
	install -m 0644 profiles/*.toml profiles/README.md $(DEB_STAGE)/examples/
	{ printf 'rocectl (%s) unstable; urgency=medium\n\n  * Package built from revision %s.\n\n' \
	    '$(DEB_VERSION)' '$(or $(GIT_REVISION),unknown)'; \
	  printf ' -- rocectl maintainers <rocectl@users.noreply.github.com>  %s\n' \
	    "$$(date -u -R -d @$(DEB_EPOCH))"; } | gzip -9n > $(DEB_STAGE)/changelog.gz
	ROCECTL_STAGE=$(DEB_STAGE) ROCECTL_DEB_VERSION=$(DEB_VERSION) ROCECTL_ARCH=$(DEB_ARCH) \
	  SOURCE_DATE_EPOCH=$(DEB_EPOCH) $(GO) tool nfpm package -f packaging/nfpm.yaml -p deb -t $(DEB_DIR)/
	@echo "deb: $(DEB_DIR)/rocectl_$(DEB_VERSION)_$(DEB_ARCH).deb"

# The main job on a laptop: a read-only audit of a shipped profile against a
# shipped capture of a ConnectX-6 Dx host in factory defaults. Exit code 2
# means "drift found", which is the expected answer here.
demo: build
	@./$(BIN) audit -p profiles/connectx-lossless.toml --snapshot testdata/hosts/cx6dx-ofed-factory; rc=$$?; 	echo; echo "(audit exit code $$rc: 0 in sync, 2 drift, 1 error)"; [ $$rc -eq 0 ] || [ $$rc -eq 2 ]

# staticcheck (pinned as a tool in go.mod) over the three builds the tree
# has, merged: a function only the lab or the verbs build uses is not
# reported as unused. It found a dropped error and dead code that vet does
# not look for. A first run analyses the standard library and every
# dependency: about 2 minutes on 2 cores; later runs reuse its cache
# (~/.cache/staticcheck) and take about 40 seconds.
comma := ,
LINT_MATRIX := plain: -tags=\nlab: -tags=lab$(if $(VERBS_TAGS),$(comma)$(VERBS_TAGS))\nhooks: -tags=rocectl_testhooks\n
lint:
	@# gofmt first: an unformatted file once went through vet and staticcheck unseen.
	@out=$$("$$($(GO) env GOROOT)/bin/gofmt" -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); [ -z "$$out" ] || { echo "gofmt -l: not formatted:"; echo "$$out"; exit 1; }
	@echo "lint: staticcheck over the plain, lab$(if $(VERBS_TAGS),+$(VERBS_TAGS)) and test-hook builds..."
	printf '$(LINT_MATRIX)' | $(GO) tool staticcheck -matrix ./...

test: deps
	@# a new make, so that packages deps just installed are seen (VERBS_TAGS)
	$(MAKE) --no-print-directory test-all

# When this make started: test-all's last line says how long the suite took.
TEST_T0 := $(shell date +%s)

test-all:
	@echo "test: go vet, without and with the lab/verbs build tags (a first run compiles everything: about 2 minutes on 2 cores)..."
	$(GO) vet ./...
	$(GO) vet -tags "lab $(VERBS_TAGS)" ./...
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory test-unit
	@echo "test: Soft-RoCE lab VM in $(LAB) (about 757 MB; a cold setup builds netdevsim: 0.5-1.5 minutes, then one boot running the Go lab tests, with the Ansible layer so that the rack sweep runs the real sweep.yml: 5-7 minutes)..."
	@# LAB_GO_TIMEOUT is each lab test binary's hang guard (-test.timeout).
	@# With the Ansible layer, deploy/ansible's TestLabSweep runs the real
	@# playbook under TCG: about 3 minutes since the playbook records a
	@# round in one file (4 before, 7 when the build machine ran slow);
	@# the 5m default is for binaries without Ansible.
	LAB_ANSIBLE=1 LAB_GO_TIMEOUT=10m $(MAKE) --no-print-directory lab-short
	@echo "test: the whole suite in $$(( $$(date +%s) - $(TEST_T0) ))s (budget: 900s on 2 busy cores, lab included), load average $$(cut -d' ' -f1-3 /proc/loadavg)"

# The tests' scratch files go to a tmpfs where there is one. They write
# fixture hosts of up to 10,000 files (a 64-port ConnectX host's sysfs,
# which on a real host lives in memory too), and on some CI machines' ext4
# each file created costs about 0.8 ms: 10,000 files took 7.8 s on /tmp
# against 0.13 s on /dev/shm, and the apply, nic/snapshot and testkit/hosts
# tests 78 s against 26 (2026-12-04). TEST_TMPDIR= (empty) keeps $TMPDIR.
# The live apply benchmark is not run with it: it keeps its state dir on
# disk, where the journal's fsyncs are real.
TEST_TMPDIR ?= $(shell [ "$$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && [ -w /dev/shm ] && echo /dev/shm)
TEST_ENV = $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR))

# Unit, fixture, namespace and end-to-end tests (root runs the namespace ones;
# they create their own network namespaces and never touch the host's links).
test-unit:
	@echo "test: unit, fixture, namespace and end-to-end tests, the Ansible role's included (about 5 minutes on 2 cores; a package's line comes when it finishes, deploy/ansible's after about 1.5 minutes)..."
	@# Every package's time, and the slowest at the end (test/timing).
	$(TEST_ENV) bash -o pipefail -c '$(GO) test -count=1 -timeout 15m ./... 2>&1 | test/timing/slowest.sh 8'
	@echo "test: every benchmark once (-benchtime 1x), and as root the apply-vs-bash benchmark once..."
	@# Every benchmark once, so that one which no longer runs fails here and
	@# not in the next `make bench`; the storm benchmark (20 storms of up to
	@# 0.4 s each) is left to make bench.
	$(TEST_ENV) $(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./apply/ ./policy/ ./nic/... ./verify/ ./internal/... ./host/ ./plan/ ./nccl/ ./lldp/... ./report/ ./agent/
	$(TEST_ENV) $(GO) test -count=1 -run '^$$' -bench 'AuditPipeline|PolicyPipeline' -benchtime 1x ./cli/
	@# The live apply benchmark once too (root: it makes its own namespace and
	@# veths): it also checks that rocectl and the bash baseline leave the same
	@# files and MTUs, and it measures the floor the 20x target is held to.
	@# Exit 3 is a missed target: one run on a shared CI machine does not
	@# decide those (make bench and bench/run-all.sh do); an error still fails.
	@if [ "$$(id -u)" = 0 ]; then rc=0; RUNS=1 AUDIT_GOBENCH=0 bench/apply-vs-shell.sh -audit-ports 8 -phases 2 || rc=$$?; \
		[ $$rc = 0 ] || [ $$rc = 3 ] || exit $$rc; fi
	@if [ -n "$(VERBS_TAGS)" ]; then CGO_ENABLED=1 $(GO) test -count=1 -tags verbs ./verify/; fi

# The unit, namespace and end-to-end tests under the race detector. Not in
# `make test`: on 2 cores it adds about 3.5 minutes (the standard library
# and every dependency built again, instrumented), which would take CI past
# its 15-minute aim. Run it after changing anything that runs goroutines.
race:
	$(GO) test -race -count=1 -timeout 30m ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzLoad -fuzztime 60s ./policy/
	$(GO) test -run '^$$' -fuzz FuzzCodecs -fuzztime 30s ./policy/
	$(GO) test -run '^$$' -fuzz FuzzDecodeGetReply -fuzztime 30s ./nic/dcb/
	$(GO) test -run '^$$' -fuzz FuzzFastLink -fuzztime 30s ./nic/snapshot/
	$(GO) test -run '^$$' -fuzz FuzzFastTop -fuzztime 30s ./nic/snapshot/

bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./policy/ ./apply/ ./verify/ ./nic/dcb/
	bench/apply-vs-shell.sh

clean:
	rm -rf bin

# --- lab (test/lab) ---
# Soft-RoCE + netdevsim QEMU lab (see test/lab/README.md). Needs root and Debian 12.
# Work dir $(LAB) is outside the tree; CI may cache $(LAB)/out (~23 MB) to skip the setup.
# LAB_GO_FLAGS is passed to every Go test binary (e.g. LAB_GO_FLAGS='-test.run TestPFC').
LAB ?= /var/tmp/roce-lab
LAB_SCRIPTS := test/lab
LAB_RUN_ENV = LAB=$(LAB) LAB_QUIET=$${LAB_QUIET:-1}

.PHONY: lab-setup lab lab-short lab-selftest

lab-setup:
	@t0=$$(date +%s); LAB=$(LAB) $(LAB_SCRIPTS)/setup.sh && echo "lab-setup: done in $$(( $$(date +%s) - t0 ))s"

# self-test boot only: verbs/perftest/rdma_cm smoke test, netdevsim DCB and stats
lab-selftest: lab-setup
	@t0=$$(date +%s); $(LAB_RUN_ENV) $(LAB_SCRIPTS)/run-lab.sh -s $(LAB_SCRIPTS)/tests $(LAB_SCRIPTS)/tests/suite.sh; \
	rc=$$?; echo "lab-selftest: exit $$rc in $$(( $$(date +%s) - t0 ))s"; exit $$rc

# setup + one boot running the Go lab tests only
lab-short: lab-setup
	@t0=$$(date +%s); $(LAB_RUN_ENV) $(LAB_SCRIPTS)/run-go-tests.sh $(LAB_GO_FLAGS); \
	rc=$$?; echo "lab-short: exit $$rc in $$(( $$(date +%s) - t0 ))s"; exit $$rc

# setup + self-test boot + Go lab tests boot (both run; fails if either fails)
lab: lab-setup
	@t0=$$(date +%s); \
	$(LAB_RUN_ENV) $(LAB_SCRIPTS)/run-lab.sh -s $(LAB_SCRIPTS)/tests $(LAB_SCRIPTS)/tests/suite.sh; s=$$?; \
	t1=$$(date +%s); echo "lab: self-test exit $$s in $$(( t1 - t0 ))s"; \
	$(LAB_RUN_ENV) $(LAB_SCRIPTS)/run-go-tests.sh $(LAB_GO_FLAGS); g=$$?; \
	echo "lab: self-test exit $$s in $$(( t1 - t0 ))s, go tests exit $$g in $$(( $$(date +%s) - t1 ))s"; \
	[ $$s -eq 0 ] && [ $$g -eq 0 ]
# --- end lab ---
