# The README's commands.
.PHONY: run test bench deps fuzz

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

# Fuzz targets of every decoder of untrusted input, as package:Target. Their
# seeds (f.Add and testdata/fuzz) run in `make test` as ordinary tests; here
# each target fuzzes for FUZZTIME. New corpus entries go to the Go cache;
# a failing input is written to the package's testdata/fuzz.
FUZZTIME ?= 20s
FUZZ_TARGETS = \
	./gateway/openaiwire:FuzzDecodeRequest \
	./internal/jsonenc:FuzzAppendString \
	./internal/jsonenc:FuzzAppendFloat \
	./gateway/openaiwire:FuzzUnquote \
	./gateway:FuzzChatCompletionsBody \
	./gateway:FuzzNativeRunBody \
	./gateway:FuzzA2ARequestBody \
	./gateway:FuzzAuthorizationHeader \
	./agentcore/a2a:FuzzDecodeWire \
	./agentcore/a2a:FuzzSSEData \
	./agentcore/model/openai:FuzzSSE \
	./agentcore/model/openai:FuzzDecode \
	./agentcore/model/gemini:FuzzDecodeChunk \
	./agentcore:FuzzInjectState \
	./agentcore:FuzzRedactParts \
	./auth:FuzzAuthenticate \
	./auth:FuzzVerifyToken

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done
