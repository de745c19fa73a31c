# Hookline. `make run` and `make test` are the two commands; everything else is a helper.
# With DATABASE_URL empty, both use a project-managed PostgreSQL under ./.data/ (see internal/pgdev).

GO        ?= go
SQLC      := $(GO) tool -modfile=tools/go.mod sqlc
TEMPL     := $(GO) tool templ
OAPI      := $(GO) tool -modfile=tools/go.mod oapi-codegen
GENERATED := internal/db web/templates client/openapi.gen.go

# make fuzz: each fuzz target runs FUZZTIME; make test under CI=true runs them for CI_FUZZTIME each.
# A new input's minimisation is bounded too (Go's default, 60 s, would stall a short run).
FUZZTIME         ?= 10s
CI_FUZZTIME      ?= 10s
FUZZMINIMIZETIME ?= 2s

.PHONY: run build image helm test fuzz generate check-generated vet bench bench-go browser stop-db clean

## run: build, start PostgreSQL if needed, migrate, seed the demo tenant and serve on :8080
run: build
	HOOKLINE_DEMO=true HOOKLINE_LOG_FORMAT=$${HOOKLINE_LOG_FORMAT:-text} HOOKLINE_INCIDENT_AFTER=$${HOOKLINE_INCIDENT_AFTER:-2m} ./bin/server

## build: the server, bin/server, and the command line, bin/hookline (static: no cgo, so it runs on any
## Linux of its architecture, in the image's scratch too)
build:
	$(GO) build -o bin/server ./cmd/server
	CGO_ENABLED=0 $(GO) build -o bin/hookline ./cmd/hookline

## image: the container image as an OCI layout tarball, dist/hookline-image.tar (linux/amd64 and linux/arm64,
## from scratch, reproducible), built without a container daemon: `docker load -i` or `podman load -i` it
# The image builder and the deployment checks are a module of their own (deploy/go.mod), so the server's
# go.mod carries none of what only they need (go-containerregistry, Prometheus' rule parser, Kubernetes' types).
DEPLOY_GO := $(GO) -C deploy
image:
	$(DEPLOY_GO) run ./image -root $(CURDIR) -o $(CURDIR)/dist/hookline-image.tar

## helm: lint the Helm chart and render it with its default values (helm is a Go tool pinned in tools/go.mod;
## deploy/deploy_test.go decodes the rendered manifests into their Kubernetes types)
HELM  := $(GO) tool -modfile=tools/go.mod helm
CHART := deploy/helm/hookline
# Rendering offline, helm assumes a Kubernetes version; a helm built from its Go module says v1.20, below the
# chart's kubeVersion, so one is given (deploy/deploy_test.go renders with the same).
KUBE_VERSION := 1.34.0
helm:
	$(HELM) lint --strict $(CHART)
	$(HELM) template hookline $(CHART) --kube-version $(KUBE_VERSION) >/dev/null
	$(HELM) template hookline $(CHART) --kube-version $(KUBE_VERSION) --set serviceMonitor.enabled=true --set prometheusRule.enabled=true >/dev/null

## test: generated code up to date, vet, the Helm chart, and every test with the race detector, the server's
## module then deploy/'s (deploy/image's test builds the image twice: a minute or more of cross-compiling on a
## fresh machine)
test: browser check-generated vet helm
	$(GO) test -race -count=1 -timeout 20m ./...
	$(DEPLOY_GO) test -race -count=1 -timeout 20m ./...
ifeq ($(CI),true)
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(CI_FUZZTIME)
endif

## fuzz: every fuzz target (func FuzzX in a _test.go under internal/ or cmd/), FUZZTIME each; a plain
## `go test` runs their seed corpora. -fuzz takes one package and one target per run, hence the loop; a
## failing input is saved under the package's testdata/fuzz/ and fails the run (scripts/fuzz-one says
## which one failure of Go 1.26's own it lets through).
fuzz:
	@targets=$$(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' internal cmd | \
	  sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)$$#./\1 \2#' | sort -u); \
	if [ -z "$$targets" ]; then echo "no fuzz targets found"; exit 1; fi; \
	echo "$$targets" | while read -r pkg fn; do \
	  GO="$(GO)" scripts/fuzz-one $$pkg $$fn $(FUZZTIME) $(FUZZMINIMIZETIME) || exit 1; \
	done

vet:
	$(GO) vet ./...
	$(DEPLOY_GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.data/*') | grep -v '_templ.go$$' || true); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi

## generate: regenerate sqlc and templ output and the Go SDK's client of api/openapi.yaml (committed)
generate:
	$(SQLC) generate
	$(TEMPL) generate -path web/templates
	$(OAPI) -config client/oapi-codegen.yaml api/openapi.yaml

## check-generated: fail when committed generated code differs from what the generators make now
check-generated: generate
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  status=$$(git status --porcelain -- $(GENERATED)); \
	  if [ -n "$$status" ]; then \
	    echo "generated code is stale or uncommitted (run 'make generate' and commit):"; echo "$$status"; \
	    git --no-pager diff --stat -- $(GENERATED); exit 1; \
	  fi; \
	else $(SQLC) diff; fi

## browser: the dashboard's browser tests need Debian's chromium; install it when missing
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  echo "chromium is missing: installing Debian's chromium package for the browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; \
	  else echo "install it with: apt-get install chromium"; exit 1; fi; }

## bench: the benchmark harness (docs/benchmarks.md): the real server against a fresh database and a
## loopback receiver; prints a table and writes bench/results.json. BENCHFLAGS passes flags, for example
## make bench BENCHFLAGS='-only drain,ceiling'. Figures are only comparable within one run.
BENCHFLAGS ?=
bench:
	$(GO) run ./cmd/bench $(BENCHFLAGS)

## bench-go: the Go benchmarks of the packages (go test -bench)
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

## stop-db: stop the project-managed PostgreSQL
stop-db:
	$(GO) run ./cmd/devdb -stop

clean:
	rm -rf bin dist
