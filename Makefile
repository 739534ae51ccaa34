# The README's commands.
.PHONY: run test bench deps

run:
	go run ./cmd/gateway

# deps installs what the suites need when it is missing (redis-server, chromium,
# each Node suite's npm ci when node_modules is missing or stale); see testing/deps.sh.
deps:
	@bash testing/deps.sh

test: deps
	go vet ./...
	go test -race -count=1 -timeout 15m ./...
	@if [ -f clients/package.json ]; then cd clients && npm test; fi
	@if [ -f e2e/adk/package.json ]; then cd e2e/adk && npm test; fi
	@if [ -f e2e/a2a/package.json ]; then cd e2e/a2a && npm test; fi

bench:
	go test -run '^$$' -bench . -benchmem ./...
