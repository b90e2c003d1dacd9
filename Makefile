# kagent build and test entry points.
#   make build   - the kagent binary in bin/
#   make venv    - .venv with the pinned Python stack of requirements.txt (torch, triton)
#   make test    - every test: Go (with -race) and the Python harness at the same
#                  time, on the CPU (Triton kernels through Triton's interpreter)
#   make lint    - gofmt and go vet
#   make npm-mock - .cache/npm with the npm test servers of .ci/npm (an
#                  OpenAI-compatible mock the agent/llm tests run against)
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
GO ?= go
GOFLAGS_TEST ?= -race -count=1 -timeout 30m
# torch.compile's cache for the tests' baselines, shared by every test of a run
# (and kept between runs of one checkout).
TEST_INDUCTOR_CACHE ?= $(CURDIR)/.cache/inductor
# The venv is built only when PYTHON is its interpreter (PYTHON=... uses another).
PYDEP := $(if $(filter $(VENV)/bin/python,$(PYTHON)),$(VENV)/.installed)

# The npm packages the Go tests start as servers, pinned with all their
# dependencies in .ci/npm/package-lock.json (@dwmkerr/mock-llm, a rule-driven
# OpenAI-compatible mock; agent/llm's TestThirdPartyMock finds it here).
NPM_DIR ?= .cache/npm

.PHONY: build test test-go test-python lint linux gpu-binaries gpu-carry venv npm-mock

build:
	$(GO) build -buildvcs=auto -o bin/kagent ./cmd/kagent

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

npm-mock: $(NPM_DIR)/.installed

$(NPM_DIR)/.installed: .ci/npm/package.json .ci/npm/package-lock.json
	mkdir -p $(NPM_DIR)
	cp .ci/npm/package.json .ci/npm/package-lock.json $(NPM_DIR)/
	cd $(NPM_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# A static linux/amd64 binary, for the GPU machine.
linux:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -o bin/kagent-linux-amd64 ./cmd/kagent

# The Go and Python suites run at the same time (most of either is waiting on
# Python processes, not computing); the Python suite's log is printed after the
# Go suite's output, and make test fails if either failed.
test: $(PYDEP)
	@mkdir -p .cache; rm -f .cache/test-python.log; \
	( $(MAKE) --no-print-directory test-python > .cache/test-python.log 2>&1; echo $$? > .cache/test-python.rc ) & \
	$(MAKE) --no-print-directory test-go; go_rc=$$?; wait; \
	echo "== Python harness suite (ran alongside the Go suite)"; cat .cache/test-python.log; \
	py_rc=$$(cat .cache/test-python.rc); \
	if [ $$go_rc -ne 0 ] || [ $$py_rc -ne 0 ]; then echo "make test: Go suite exit $$go_rc, Python suite exit $$py_rc"; exit 1; fi

# KAGENT_REQUIRE_TRITON makes the tests that run Triton kernels on the CPU fail
# (not skip) when the interpreter's Python lacks triton. GORACE: a race-detector
# binary (every test binary, and the sandbox inits they start) exits without
# its default one-second sleep.
test-go: $(PYDEP)
	GORACE=atexit_sleep_ms=0 TORCHINDUCTOR_CACHE_DIR=$(TEST_INDUCTOR_CACHE) KAGENT_PYTHON=$(abspath $(PYTHON)) KAGENT_REQUIRE_TRITON=1 $(GO) test $(GOFLAGS_TEST) ./...

test-python: $(PYDEP)
	cd harness && TORCHINDUCTOR_CACHE_DIR=$(TEST_INDUCTOR_CACHE) KAGENT_DEVICE=cpu TRITON_INTERPRET=1 KAGENT_REQUIRE_TRITON=1 $(abspath $(PYTHON)) -m unittest discover -s tests -t . -v

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod or go.sum is not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }

# Binaries carried to the GPU machine (linux/amd64, static, without symbol
# tables). gpu-carry also writes them gzipped to .carry/bin, about 25 MB
# together, where a copy of the tree must stay small; there,
# scripts/unpack-binaries.sh puts them in bin/.
GPU_BUILD = CGO_ENABLED=0 GOOS=linux GOARCH=amd64
GPU_LDFLAGS = -ldflags="-s -w"

gpu-binaries:
	$(GPU_BUILD) $(GO) build $(GPU_LDFLAGS) -o bin/kagent ./cmd/kagent
	$(GPU_BUILD) $(GO) build $(GPU_LDFLAGS) -o bin/enginebench ./cmd/enginebench
	$(GPU_BUILD) $(GO) test -c $(GPU_LDFLAGS) -o bin/worker.test ./platform/worker

gpu-carry: gpu-binaries
	mkdir -p .carry/bin
	for b in kagent enginebench worker.test; do gzip -c bin/$$b > .carry/bin/$$b.gz; done
