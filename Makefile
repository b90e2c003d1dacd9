# kagent build and test entry points.
#   make build   - the kagent binary in bin/
#   make test    - every test: Go (with -race) and the Python harness (CPU torch)
#   make lint    - gofmt and go vet
PYTHON ?= $(shell command -v /usr/bin/python3 || command -v python3)
GO ?= go
GOFLAGS_TEST ?= -race -count=1

.PHONY: build test test-go test-python lint linux gpu-binaries

build:
	$(GO) build -o bin/kagent ./cmd/kagent

# A static linux/amd64 binary, for the GPU machine.
linux:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -o bin/kagent-linux-amd64 ./cmd/kagent

test: test-go test-python

test-go:
	KAGENT_PYTHON=$(PYTHON) $(GO) test $(GOFLAGS_TEST) ./...

test-python:
	cd platform/worker/harness && KAGENT_DEVICE=cpu $(PYTHON) -m unittest discover -s tests -t . -v

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Binaries carried to the GPU machine (linux/amd64, static).
gpu-binaries:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -o bin/kagent ./cmd/kagent
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -o bin/enginebench ./cmd/enginebench
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) test -c -o bin/worker.test ./platform/worker
