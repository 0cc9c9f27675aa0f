# perflab: `make demo` runs the Northwind serialization benchmark; `make test` runs
# every test (Rust and Python). Both set up what they need on a fresh machine.

VENV    := .venv
PY      := $(VENV)/bin/python
PIP     := $(VENV)/bin/pip
STAMPS  := .stamps
CARGO   ?= cargo
export CARGO_TARGET_DIR := $(CURDIR)/rust/target
RUST_SOURCES := $(shell find rust -name '*.rs' -o -name Cargo.toml | grep -v '^rust/target')

.PHONY: all build demo test test-fast lint test-rust test-python test-install system-deps bench-deps bench clean

all: build

$(STAMPS):
	mkdir -p $(STAMPS)

# Debian packages the tests need: libfaketime (clock fault injection), openssl
# (a self-signed certificate for the https tests), nginx (the https target of the
# distributed-load test), chromium (the HTML report's browser
# test, driven by Playwright), memcached and redis-server (the examples' cache and queue
# servers; policy-rc.d keeps the packages from starting system services), hyperfine (the
# interop tests read files it writes), valgrind (--count instructions; the build needs
# none of it: rust/core/csrc/ vendors the client-request headers). Installed only where
# missing; rechecked when this file changes.
$(STAMPS)/system-deps: Makefile | $(STAMPS)
	@missing=; ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || missing=libfaketime; \
	command -v openssl >/dev/null 2>&1 || missing="$$missing openssl"; \
	test -x /usr/sbin/nginx || missing="$$missing nginx"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	test -x /usr/bin/memcached || missing="$$missing memcached"; \
	test -x /usr/bin/redis-server || missing="$$missing redis-server"; \
	command -v hyperfine >/dev/null 2>&1 || missing="$$missing hyperfine"; \
	command -v valgrind >/dev/null 2>&1 || missing="$$missing valgrind"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then guard=; if [ ! -e /usr/sbin/policy-rc.d ]; then \
	      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; \
	      chmod +x /usr/sbin/policy-rc.d; guard=1; fi; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq $$missing >/dev/null; status=$$?; \
	    if [ -n "$$guard" ]; then rm -f /usr/sbin/policy-rc.d; fi; exit $$status; \
	  else echo "note: $$missing missing and not root; their tests will be skipped"; fi; fi
	touch $@

# The peers the benchmarks run beside perflab: hyperfine, nginx and wrk (Debian);
# memcached and redis-server for examples/cache.py and queues.py (via system-deps).
$(STAMPS)/bench-deps: $(STAMPS)/system-deps $(STAMPS)/venv | $(STAMPS)
	@if ! command -v hyperfine >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq hyperfine >/dev/null || echo "note: hyperfine not installed;" \
	    "benchmarks/cmd.py needs it"; \
	  else echo "note: hyperfine missing and not root; benchmarks/cmd.py needs it"; fi; fi
	@# nginx and wrk for benchmarks/http.py, h2load (nghttp2-client) for benchmarks/http2.py
	@# (their own nginx in a temp dir; policy-rc.d keeps the package from starting the
	@# system nginx service on install).
	@if ! command -v nginx >/dev/null 2>&1 && ! test -x /usr/sbin/nginx || \
	    ! command -v wrk >/dev/null 2>&1 || ! command -v h2load >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then guard=; if [ ! -e /usr/sbin/policy-rc.d ]; then \
	      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; \
	      chmod +x /usr/sbin/policy-rc.d; guard=1; fi; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      nginx wrk nghttp2-client >/dev/null || echo "note: nginx/wrk/h2load not installed;" \
	      "benchmarks/http.py and http2.py need them (tests don't)"; \
	    if [ -n "$$guard" ]; then rm -f /usr/sbin/policy-rc.d; fi; \
	  else echo "note: nginx, wrk or h2load missing and not root; benchmarks/http.py and" \
	    "http2.py need them"; fi; fi
	@# psrecord and memray: the memory peers of benchmarks/memory.py
	$(PIP) install -q "psrecord>=1.4" "memray>=1.20"
	touch $@

system-deps: $(STAMPS)/system-deps
bench-deps: $(STAMPS)/bench-deps

$(STAMPS)/venv: pyproject.toml | $(STAMPS)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.7,<2" "ruff==0.17.6" numpy scipy rich matplotlib fastjsonschema ruptures pytest hypothesis pyperf hdrhistogram uvloop playwright \
	  orjson msgpack cbor2 opentelemetry-sdk uvicorn gunicorn \
	  pymemcache redis cachetools py-spy
	@# Ray: the distributed load agents (perflab http --agents; the [cluster] extra, with
	@# Ray Client for --cluster ray://)
	$(PIP) install -q "ray[client]>=2.40"
	touch $@

# Peers of the interop tests (pytest plugin, Python API), installed beside the venv, not in it:
# with pytest-benchmark importable perflab's own `benchmark` compatibility fixture steps
# aside, and the tests of that fixture need it absent. A test puts a folder on the
# PYTHONPATH of the child pytest that needs it (tests/interop/test_real_plugins.py).
PEERS := $(VENV)/peers
$(STAMPS)/peers: $(STAMPS)/venv Makefile | $(STAMPS)
	rm -rf $(PEERS) && mkdir -p $(PEERS)
	$(PIP) install -q --no-deps --target $(PEERS)/pytest-benchmark "pytest-benchmark==5.3.1" \
	  "py-cpuinfo==9.0.0"
	$(PIP) install -q --no-deps --target $(PEERS)/xdist "pytest-xdist==3.8.0" "execnet>=2.1"
	@# pandas for perflab.load(...).to_pandas(), which perflab does not depend on
	$(PIP) install -q --no-deps --target $(PEERS)/pandas "pandas>=2.2" pytz
	touch $@

$(STAMPS)/build: $(STAMPS)/venv $(RUST_SOURCES) pyproject.toml | $(STAMPS)
	. $(VENV)/bin/activate && maturin develop -q
	touch $@

build: $(STAMPS)/build

# ±2% ranks serializers that differ 2-16x; each of the 12 benchmarks gets up to 8 s. Where
# a busy machine keeps a benchmark from ±2%, one warning line names them and says why.
demo: build
	$(PY) -m perflab run examples/serialization.py --quick \
	  --json out/northwind.json

test: build system-deps lint test-rust test-python test-install

# The inner loop: statistics, tables, charts, golden snapshots, the results model and the
# architecture's rules; no Debian packages, no Ray, no servers, no load engine. Under two
# minutes on 2 cores (make test runs these too).
FAST_TESTS := tests/analyze tests/report tests/golden tests/history tests/test_architecture.py \
  tests/test_rust_architecture.py tests/test_model.py tests/test_units.py \
  tests/test_units_fraction.py tests/test_docs.py tests/test_columns_documented.py \
  tests/test_schema_cache.py
test-fast: build
	$(PY) -m pytest -p no:cacheprovider $(wildcard $(FAST_TESTS))

# Lint and format checks: ruff (pinned in the venv) for Python, rustfmt and clippy (every
# warning an error) for Rust.
lint: $(STAMPS)/venv
	$(VENV)/bin/ruff check python tests benchmarks examples
	$(VENV)/bin/ruff format --check python tests benchmarks examples
	cd rust && $(CARGO) fmt --all --check
	cd rust && $(CARGO) clippy -q --workspace --all-targets -- -D warnings

# --examples: the speed probe (examples/speed.rs) is built too, so it can't rot.
test-rust:
	cd rust && $(CARGO) test -q -p perflab-engine --lib --examples

# The tests start Python (`python -m perflab`, its workers, the examples) over a thousand
# times. Where PYTHONDONTWRITEBYTECODE is set (as on this CI machine) no process caches
# bytecode, so each would compile perflab's modules from source again: they are compiled
# once here. Python checks each file's stamp, so an edited module is never run stale.
test-python: build $(STAMPS)/peers
	$(PY) -m compileall -q python/perflab examples
	$(PY) -m pytest tests

# A user's install, outside this repository and its .venv: `pip wheel .` builds the wheel
# (the PEP 517 build `pip install .` makes) and pip installs it, with its dependencies,
# into a fresh venv; then the installed perflab runs. One build, not two (`pip install .`
# would build it again), and no byte-compiling of numpy, scipy and matplotlib at install
# (--no-compile: half of this check's time; pip does not fail an install on a file that
# does not compile, so it found nothing). The debug profile reuses the engine that `make
# build` compiled (a release build from scratch takes minutes). The folder is named after
# the checkout, so two clones can test at once without removing each other's venv.
INSTALL_DIR := $(or $(TMPDIR),/tmp)/perflab-install-test-$(shell printf %s "$(CURDIR)" | cksum | cut -d' ' -f1)
test-install: build
	rm -rf $(INSTALL_DIR) && mkdir -p $(INSTALL_DIR)
	python3 -m venv $(INSTALL_DIR)/venv
	MATURIN_PEP517_ARGS="--profile dev" $(INSTALL_DIR)/venv/bin/pip wheel -q --no-deps . \
	  -w $(INSTALL_DIR)/wheel
	$(INSTALL_DIR)/venv/bin/pip install -q --no-compile $(INSTALL_DIR)/wheel/perflab-*.whl
	cd $(INSTALL_DIR) && ./venv/bin/python $(CURDIR)/tests/install_check.py wheel/perflab-*.whl
	rm -rf $(INSTALL_DIR)

# Benchmarks need the optimised native core: one release build, then the debug
# build is redone by the next `make build`.
bench: $(STAMPS)/venv $(STAMPS)/bench-deps
	. $(VENV)/bin/activate && maturin develop -q --release
	rm -f $(STAMPS)/build
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(STAMPS) $(VENV) rust/target out
