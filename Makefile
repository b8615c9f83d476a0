# mcd developer targets. Run `bash scripts/setup.sh` first (the README's commands do).
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo lint test unit fake-stage cluster-stages test-real real-stage image test-nodes bench bench-ratios faults scale rollout fleet idle-footprint format \
	mutation mutation-report mutation-retest

# Apply worker-1 to an empty root, then update it to worker-2: the plan first, then the
# update (its crio reload recorded as skipped: no systemd runs in a directory), then the check;
# last, the same plan under the example node disruption policy.
demo:
	rm -rf build/demo-root
	$(BIN)/mcd once-from examples/rendered-worker-1.yaml --root build/demo-root --skip-reboot
	$(BIN)/mcd validate examples/rendered-worker-1.yaml --root build/demo-root
	$(BIN)/mcd plan examples/rendered-worker-1.yaml examples/rendered-worker-2.yaml
	$(BIN)/mcd once-from examples/rendered-worker-2.yaml --root build/demo-root --skip-reboot
	$(BIN)/mcd validate examples/rendered-worker-2.yaml --root build/demo-root
	$(BIN)/mcd plan examples/rendered-worker-1.yaml examples/rendered-worker-2.yaml \
		--policy examples/machineconfiguration.yaml

lint:
	$(BIN)/ruff check mcd tests bench scripts
	$(BIN)/ruff format --check mcd tests bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports

# The suite over PYTEST_WORKERS processes: most of its time is waiting (agents as
# subprocesses, containers booting), so the waits overlap even on 2 cores. A module that
# shares one expensive fixture (the built image, a booted container) stays on one worker.
PYTEST_WORKERS ?= 4
unit:
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup -m "not nodes"

# make test's fake-API-server stage. Where the real-cluster stage runs (its kit is beside the
# checkout, as in CI), each test marked `cluster` runs once, there, against a real
# kube-apiserver; here stay the others and the cluster tests that make assertions only the fake
# can (fake_only: fault injection; fake_too: its request log). Without the kit: all of them.
REALCLUSTER ?= ../shared/realcluster
fake-stage:
ifneq ($(wildcard $(REALCLUSTER)/start.sh),)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup -m "not nodes and (not cluster or fake_only or fake_too)"
else
	$(MAKE) --no-print-directory unit
endif

# The tests with a real-cluster mode (marked `cluster`: those on kube_cluster, and the ones
# that need a real kube-apiserver) against real clusters from $(REALCLUSTER): each of the
# REAL_WORKERS xdist workers starts a throw-away etcd + kube-apiserver + kube-controller-manager
# of its own (and the kubelet stand-in), so cluster-scoped objects (00-worker, the controller's
# Lease) are never shared, and stops them by their pids at its end. Tests only the fake API
# server can do (fault injection, its request log) are skipped, each with its reason (-ra).
REAL_WORKERS ?= 4
test-real:
	MCD_TEST_REAL_CLUSTERS=1 MCD_TEST_REALCLUSTER_KIT=$(REALCLUSTER) MCD_TEST_KUBECONFIG= KUBECONFIG= \
		$(BIN)/pytest -n $(REAL_WORKERS) --dist loadgroup -m cluster

# make test's real-cluster stage: there whenever the kit is (as in CI), else one line why not
real-stage:
ifneq ($(wildcard $(REALCLUSTER)/start.sh),)
	$(MAKE) --no-print-directory test-real
else
	@echo "real-cluster stage skipped: no $(REALCLUSTER)/start.sh (the realcluster kit of shared/ beside the checkout)"
endif

# The Containerfile built offline (the base it names made once from a debootstrap, as the image
# tests do) into a tarball `realnode.sh load NODE $(IMAGE_TAR)` imports into a node's containerd
IMAGE_TAR ?= build/mcd-image.tar
IMAGE_TAG ?= localhost/mcd:dev
image:
	$(BIN)/python -m tests.nodes.image $(IMAGE_TAR) --tag $(IMAGE_TAG)

# The tests on real nodes (tests/nodes: a real kubelet, containerd and systemd per node from
# $(REALNODE), as root): the agent as the DaemonSet's pod, the rollout loop with a reboot. One
# realnode cluster per host, so they run alone, nodes shared within a module; where the kit
# cannot run, the skip says why in one line (the kit's own reason). -s: the loop's timings.
REALNODE ?= ../shared/realnode
test-nodes:
	REALNODE_KIT=$(abspath $(REALNODE)) $(BIN)/pytest -p no:cacheprovider -q -s -m nodes tests/nodes

# The absolute targets (times, MB); exits non-zero on a miss. Run it on a quiet machine.
bench:
	$(BIN)/python -m bench.report

# What `make test` runs: only ratios to same-run baselines, with headroom, and counts;
# machine load cannot fail it.
bench-ratios:
	$(BIN)/python -m bench.report --load-tolerant

# Every fault against every update kind, the bad-input corpus and 10,000 generated configs;
# the test suite runs a reduced matrix and 2,000 configs.
faults:
	MCD_FAULTS=full MCD_GENERATED_CONFIGS=10000 MCD_ROLLBACK_CRASHES=50 $(BIN)/pytest \
		-p no:cacheprovider -q tests/faults tests/integration/test_bad_corpus.py \
		tests/integration/test_generated_configs.py tests/integration/test_crash_matrix.py

scale:
	$(BIN)/python -m bench.scale

# mcd controller over 50 agents, maxUnavailable 10, against the ideal pace
rollout:
	$(BIN)/python -m bench.rollout

# mcd controller over 5,000 Ready Nodes of a real kube-apiserver with simulated agents, two
# rollouts beside a minimal pacer (MCD_FLEET_NODES, MCD_FLEET_UPDATE_SECONDS); heavy: on demand
fleet:
	$(BIN)/python -m bench.fleet

# The agents' idle API footprint per node per hour on a real kube-apiserver, by verb and
# resource (its apiserver_request_total), beside minimal Node watchers (MCD_IDLE_AGENTS,
# MCD_IDLE_SECONDS); ~17 minutes, mostly idle: on demand
idle-footprint:
	$(BIN)/python -m bench.idle_footprint

# The real-cluster and real-node stages side by side (both mostly wait: on API servers, agents,
# boots), each one's output kept together and shown when it ends
cluster-stages:
	$(MAKE) --no-print-directory -j2 --output-sync=target real-stage test-nodes

test: lint fake-stage cluster-stages bench-ratios

# Mutation testing of mcd/model with the unit tests (mutmut; config in pyproject.toml), on
# demand: not part of make test. mutmut tests in mutants/, a copy of mcd/ (only mcd/model
# mutated), tests/ and the files the tests read. A full run starts afresh (7,637 mutants: more
# than two hours on a busy 2-core machine, the parser's and planner's mutants last, as each
# runs the ~250 tests that reach them); MUTANTS="mcd.model.kargs.*" re-tests only the mutants
# named (quoted globs), keeping the other results. Then the score per sub-room of mcd/model;
# below MUTATION_MIN percent fails.
MUTATION_JOBS ?= $(shell nproc)
MUTATION_MIN ?= 85
mutation:
	$(if $(MUTANTS),,rm -rf mutants)
	$(BIN)/mutmut run --max-children $(MUTATION_JOBS) $(MUTANTS)
	$(BIN)/python scripts/mutation_report.py --fail-under $(MUTATION_MIN)

# After new tests: the survivors and untested mutants of the sub-rooms named (ROOMS="node
# pool", a module "pool/canary", or "--all") are judged again, and the mutants not checked
# yet; killed ones stay killed.
mutation-retest:
	$(BIN)/python scripts/mutation_retest.py $(ROOMS)
	$(BIN)/mutmut run --max-children $(MUTATION_JOBS)
	$(BIN)/python scripts/mutation_report.py --fail-under $(MUTATION_MIN)

# The last run's score per sub-room and the mutants it did not kill (mutmut show NAME: the diff)
mutation-report:
	$(BIN)/python scripts/mutation_report.py --survivors

format:
	$(BIN)/ruff format mcd tests bench scripts
	$(BIN)/ruff check --fix mcd tests bench scripts
