# a2abind: see README.md. Every target works on a fresh clone.
GO ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all generate check-generated test test-race vet lint bench update-golden fmt-check ci

all: check-generated vet test

## generate: regenerate generated/ from schema/
generate:
	$(GO) generate ./...

## check-generated: fail when generated/ differs from what schema/ produces
check-generated:
	$(GO) run ./cmd/a2agen -schema schema -out generated -check
	@test -z "$$(git status --porcelain --untracked-files=all -- generated 2>/dev/null)" || { echo "generated/ has uncommitted changes"; git status --short -- generated; exit 1; }

## test: the README's test command
test:
	$(GO) test -race ./...

vet:
	$(GO) vet ./...

lint: vet
	$(STATICCHECK) ./...

fmt-check:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

## bench: the benchmarks recorded in docs/benchmarks.md
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./golden/ ./statemachines/... ./agent/ ./agent/inbox/ ./agent/webhook/ ./agent/taskstore/pgstore/ ./internal/uuidv4/ ./transport/mqtt/ ./transport/http/

## update-golden: rewrite golden files after an intended change
update-golden:
	$(GO) test ./golden -update

ci: fmt-check check-generated vet lint test
