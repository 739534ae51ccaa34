# The README's commands.
.PHONY: run test bench

run:
	go run ./cmd/gateway

test:
	go vet ./...
	go test -race -count=1 -timeout 15m ./...
	@if [ -f clients/package.json ]; then cd clients && npm test; fi
	@if [ -f e2e/adk/package.json ]; then cd e2e/adk && npm test; fi
	@if [ -f e2e/a2a/package.json ]; then cd e2e/a2a && npm test; fi

bench:
	go test -run '^$$' -bench . -benchmem ./...
