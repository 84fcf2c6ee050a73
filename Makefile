# rocectl — build, test, demo. `make help` lists the targets.
#
# `make test` is the whole test suite, and what CI runs (.ci/run): it installs
# what the tests need (Debian packages, Go modules), runs vet, the unit,
# fixture and namespace tests, the end-to-end tests with the built binary, and
# the Soft-RoCE lab tests in a VM.

GO       ?= go
BIN      := bin/rocectl
# Debian packages the tests use: iproute2/ethtool only as cross-checks in
# namespace tests, libibverbs-dev for the cgo verbs layer (-tags verbs),
# util-linux's setpriv for the systemd unit test, ansible-core and PyYAML
# for the Ansible role's tests, prometheus for `promtool check metrics` on
# the agent's exposition (no smaller Debian package ships promtool; without
# recommends it adds ~100 MB; on a host booted with systemd its postinst
# also enables prometheus.service, listening on :9090).
DEB_PKGS := iproute2 ethtool gcc libc6-dev libibverbs-dev pkg-config util-linux ansible-core python3-yaml prometheus tmux
VERBS_TAGS := $(shell [ -f /usr/include/infiniband/verbs.h ] && echo verbs)

.PHONY: help deps build build-verbs demo test test-all test-unit test-e2e fuzz bench lint clean

help:
	@echo "make demo   - audit the shipped ConnectX recipe against a captured factory-default host (no RDMA NIC needed)"
	@echo "make test   - the whole test suite: deps, vet, unit/fixture/namespace tests, end-to-end, Soft-RoCE lab (needs root)"
	@echo "make build  - bin/rocectl (add verbs support with: make build-verbs)"
	@echo "make bench  - benchmarks, printed beside their baselines"
	@echo "make lab    - the full Soft-RoCE lab (self-test + Go lab tests)"

# deps installs what is missing, and only that.
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; 	if [ -n "$$missing" ]; then 	  echo "deps: apt-get install$$missing"; 	  export DEBIAN_FRONTEND=noninteractive; 	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; 	fi
	$(GO) mod download

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/rocectl

build-verbs:
	CGO_ENABLED=1 $(GO) build -trimpath -tags verbs -o $(BIN) ./cmd/rocectl

# The main job on a laptop: a read-only audit of a shipped profile against a
# shipped capture of a ConnectX-6 Dx host in factory defaults. Exit code 2
# means "drift found", which is the expected answer here.
demo: build
	@./$(BIN) audit -p profiles/connectx-lossless.toml --snapshot testdata/hosts/cx6dx-ofed-factory; rc=$$?; 	echo; echo "(audit exit code $$rc: 0 in sync, 2 drift, 1 error)"; [ $$rc -eq 0 ] || [ $$rc -eq 2 ]

test: deps
	@# a new make, so that packages deps just installed are seen (VERBS_TAGS)
	$(MAKE) --no-print-directory test-all

test-all:
	$(GO) vet ./...
	$(GO) vet -tags "lab $(VERBS_TAGS)" ./...
	$(MAKE) --no-print-directory test-unit
	$(MAKE) --no-print-directory lab-short

# Unit, fixture, namespace and end-to-end tests (root runs the namespace ones;
# they create their own network namespaces and never touch the host's links).
test-unit:
	$(GO) test -count=1 -timeout 15m ./...
	@# Every benchmark once, so that one which no longer runs fails here and
	@# not in the next `make bench`; the storm benchmark (20 storms of up to
	@# 0.4 s each) is left to make bench.
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./apply/ ./policy/ ./nic/... ./verify/ ./internal/...
	$(GO) test -count=1 -run '^$$' -bench 'AuditPipeline|PolicyPipeline' -benchtime 1x ./cli/
	@# The live apply benchmark once too (root: it makes its own namespace and
	@# veths): it also checks that rocectl and the bash baseline leave the same
	@# files and MTUs, and it measures the floor the 20x target is held to.
	@if [ "$$(id -u)" = 0 ]; then RUNS=1 AUDIT_GOBENCH=0 bench/apply-vs-shell.sh -audit-ports 8; fi
	@if [ -n "$(VERBS_TAGS)" ]; then CGO_ENABLED=1 $(GO) test -count=1 -tags verbs ./verify/; fi

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzLoad -fuzztime 60s ./policy/
	$(GO) test -run '^$$' -fuzz FuzzDecodeGetReply -fuzztime 30s ./nic/dcb/

bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./policy/ ./apply/ ./verify/ ./nic/dcb/
	bench/apply-vs-shell.sh

clean:
	rm -rf bin

# --- lab (test/lab) ---
# Soft-RoCE + netdevsim QEMU lab (see test/lab/README.md). Needs root and Debian 12.
# Work dir $(LAB) is outside the tree; CI may cache $(LAB)/out (~19 MB) to skip the setup.
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
