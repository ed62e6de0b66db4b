# singlecloud — see README.md.
SHELL := /bin/bash
GO ?= go
export SINGLECLOUD_TESTBIN ?= $(HOME)/.cache/singlecloud/testbin/v1.37.2

.PHONY: run build test test-vm bench bench-100k fuzz testbin vm-image vet

## run: start the server with embedded defaults (:8080, its files in ./singlecloud-data)
run:
	$(GO) run ./cmd/singlecloud

## build: build the binary into bin/singlecloud
build:
	$(GO) build -buildvcs=true -ldflags "-X main.version=$$(git describe --tags --always --dirty 2>/dev/null || echo dev)" -o bin/singlecloud ./cmd/singlecloud

## test: the whole test suite (builds the cached test binaries first; the testbed and e2e tests need root)
test: testbin vm-image
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 60m ./...
	FUZZTIME=5s bash test/fuzz/run.sh

## test-vm: opt-in, needs root: a whole cluster on three Debian 12 VMs (QEMU, emulated) created at v1.36.3 with the
## defaults and upgraded to v1.37.2 (time in README.md)
test-vm: testbin vm-image
	set -o pipefail; $(GO) test -tags vmcluster -count=1 -timeout 150m -v -run '^TestVMClusterCreatesAndUpgrades$$' ./test/e2e/ \
		| grep -E 'testbed: .*VM|took|^(ok|FAIL|--- )|_test.go'

## fuzz: every fuzz target for FUZZTIME each (default 2m here)
fuzz:
	FUZZTIME=$${FUZZTIME:-2m} bash test/fuzz/run.sh

## bench: the speed benchmarks (write latency on bbolt and etcd, failover of etcd replicas), then the timings the end-to-end tests log on testbed hosts (snapshot, drill,
## restore, upgrade per node, rotations; these need root, as make test); numbers are recorded in README.md
bench: testbin
	$(GO) test -run '^$$' -bench . -benchtime 3x -count 1 ./clustermanager/ ./zke/pki/ ./snapshots/ ./storage/ ./cmd/singlecloud/
	set -o pipefail; $(GO) test -count=1 -timeout 20m -v -run '^(TestHAReplicasFailover|TestHAInstallResumesOnTheNewLeader)$$' \
		./test/e2e/ | grep -E 'failover took|failover during|write loop|paused leader|install resumed|^(ok|FAIL|--- )'
	$(GO) run ./test/bench/listbench -rounds 2
	set -o pipefail; $(GO) test -count=1 -timeout 60m -v \
		-run '^(TestCreateClusterOnHosts|TestUpgradeKeepsTheWorkloadAndReverts|TestSharedEndpointSurvivesAControlPlaneNode)$$' ./test/e2e/ \
		| grep -E 'took|per node|longest stretch|snapshot taken|drill:|API answering|^(ok|FAIL|--- )'

## bench-100k: listbench's start-up to the first whole list at 100,000 stored clusters (issue 11: < 10 s); opt-in,
## seeding them takes ~14 minutes on the 2-core VM
bench-100k:
	$(GO) run ./test/bench/listbench -sizes 100000 -states unavailable -rounds 2

## testbin: build and cache Kubernetes v1.37.2 and v1.36.3, etcd and the test images (outside the repo)
testbin:
	bash test/testbin/build.sh

## vm-image: the Debian 12 virtual machine the end-to-end tests boot with QEMU (cached in $(HOME)/.cache/singlecloud/vm;
## about a minute and 1 GB of Debian's packages the first time, seconds after; needs root)
vm-image:
	bash test/vm/build.sh
