# `make run` and `make test` are the README's two set-up commands.
GO ?= go
FUZZTIME ?= 1m

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: run test lint build bench fuzz up compose-config multiproc multiproc-cluster hitbench hitbench-dashboard hitbench-yoga e2e playground reliability capacity clients readers paths

run: ## run the API in demo mode on :8080 (built-in pages, no network)
	$(GO) run ./cmd/tmefeed serve --demo

# TEST_TIMEOUT bounds each package's test binary: a bound on a hang, not a
# measure. Under the race detector on 2 cores kept busy by other work, the
# cache package takes about 2 minutes a pass, and go test's default of 10
# leaves -count=3 no room; CI gives the whole of .ci/run 90 minutes.
TEST_TIMEOUT ?= 30m

test: ## every check CI runs
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v '/live$$')
	# The live tests run on their own: most are on synctest's fake clock,
	# but the two that share updates through a real redis-server are not.
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./live
	# The memory suites measure the real build: the race detector multiplies heap and RSS.
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run 'Memory|Accounting|MatchesHeap' ./cmd/tmefeed ./pages ./feed ./cache ./graph

lint: ## go vet and staticcheck (pinned version, its default checks: no staticcheck.conf)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

build: ## build bin/tmefeed
	$(GO) build -o bin/tmefeed ./cmd/tmefeed

bench: ## run every benchmark once, with allocations
	$(GO) test -run='^$$' -bench=. -benchmem ./...

e2e: build ## GraphiQL in headless Chromium (Debian's chromium) against the demo server; screenshot in e2e/artifacts/
	TMEFEED_BIN=$(CURDIR)/bin/tmefeed $(GO) test -tags e2e -count=1 -v ./e2e/

clients: build ## stock clients (npm, pinned by clients/package-lock.json) against the demo server: codegen + tsc --strict, urql graphcache and Apollo paging, graphql-ws and graphql-sse through a SIGTERM and restart
	cd clients && npm ci --no-audit --no-fund && TMEFEED=$(CURDIR)/bin/tmefeed node --conditions=development suite.mjs

readers: ## Miniflux (miniflux.app/v2@v2.3.5, built once into the user cache) over a PostgreSQL of its own reads the RSS, Atom and JSON Feed documents of the recorded channels; entries must match the JSON API
	$(GO) run ./tools/readers

playground: ## refresh web/dist from npm's graphiql, pinned by web/package-lock.json
	cd web && npm ci --no-audit --no-fund && npm run build

fuzz: ## fuzz the parser for FUZZTIME (default 1m)
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=$(FUZZTIME) ./parser

# docker compose (plugin) where it works, else Debian's docker-compose.
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)

up: .env ## two tmefeed replicas (:8080, :8081) sharing one Valkey; needs a Docker engine
	$(COMPOSE) up --build

compose-config: .env ## validate docker-compose.yml (needs no engine)
	$(COMPOSE) config --quiet

# docker-compose.yml reads the settings in .env (env_file): an empty one
# when none was copied from .env.example.
.env:
	touch .env

multiproc: ## 3 tmefeed processes over one redis-server, 32 clients each for 20s: origin fetches must equal the minimum
	$(GO) run ./tools/multiproc

multiproc-cluster: ## the same over a 3-node Redis Cluster, then again losing one node 5s in: no request may fail
	$(GO) run ./tools/multiproc -cluster 3 -burst
	$(GO) run ./tools/multiproc -cluster 3 -kill-node-after 5s -late 20

hitbench: ## cached GET /v1/body/tmefeed_news against a bare net/http server with the same bytes, 5 alternating rounds (HITBENCH_FLAGS="-path ...")
	$(GO) run ./tools/hitbench $(HITBENCH_FLAGS)

hitbench-dashboard: ## the same for REST's /v1/body beside a 3-channel GraphQL dashboard query over POST and GET, interleaved in every round
	$(GO) run ./tools/hitbench -dashboard $(HITBENCH_FLAGS)

hitbench-yoga: ## hitbench-dashboard with the Yoga + response-cache peer (tools/yogapeer) measured beside the GraphQL requests
	cd tools/yogapeer && npm ci --no-audit --no-fund
	$(GO) run ./tools/hitbench -yoga $(HITBENCH_FLAGS)

reliability: ## run the abuse, fault and memory suites; rewrite the figures table in docs/RELIABILITY.md
	$(GO) run ./tools/reliability

capacity: ## simulate origin requests, freshness and egress addresses for 1,000 / 10,000 / 100,000 channels; rewrite the table in docs/OPERATIONS.md
	$(GO) run ./tools/capacity -write docs/OPERATIONS.md

paths: ## which source files a cached REST hit, a cold GraphQL feed and a live update run (coverage, warm-up subtracted); checks docs/ARCHITECTURE.md's lists (PATHS_FLAGS=-write rewrites its table)
	$(GO) run ./tools/paths -doc docs/ARCHITECTURE.md $(PATHS_FLAGS)
