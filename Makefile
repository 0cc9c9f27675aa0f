# perflab: `make demo` runs the Northwind serialization benchmark; `make test` runs
# every test (Rust and Python). Both set up what they need on a fresh machine.

VENV    := .venv
PY      := $(VENV)/bin/python
PIP     := $(VENV)/bin/pip
STAMPS  := .stamps
CARGO   ?= cargo
export CARGO_TARGET_DIR := $(CURDIR)/rust/target
RUST_SOURCES := $(shell find rust -name '*.rs' -o -name Cargo.toml | grep -v '^rust/target')

.PHONY: all build demo test test-rust test-python system-deps bench-deps bench clean

all: build

$(STAMPS):
	mkdir -p $(STAMPS)

# Debian packages the tests need: libfaketime (clock fault injection) and openssl
# (a self-signed certificate for the https test). Installed only where missing.
$(STAMPS)/system-deps: | $(STAMPS)
	@missing=; ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || missing=libfaketime; \
	command -v openssl >/dev/null 2>&1 || missing="$$missing openssl"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq $$missing >/dev/null; \
	  else echo "note: $$missing missing and not root; their tests will be skipped"; fi; fi
	touch $@

# The peers the benchmarks run beside perflab: hyperfine, nginx and wrk (Debian).
$(STAMPS)/bench-deps: | $(STAMPS)
	@if ! command -v hyperfine >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq hyperfine >/dev/null || echo "note: hyperfine not installed;" \
	    "benchmarks/cmd.py needs it (tests don't)"; \
	  else echo "note: hyperfine missing and not root; benchmarks/cmd.py needs it"; fi; fi
	@# nginx and wrk for benchmarks/http.py (its own nginx in a temp dir; policy-rc.d
	@# keeps the package from starting the system nginx service on install).
	@if ! command -v nginx >/dev/null 2>&1 && ! test -x /usr/sbin/nginx || \
	    ! command -v wrk >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then guard=; if [ ! -e /usr/sbin/policy-rc.d ]; then \
	      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; \
	      chmod +x /usr/sbin/policy-rc.d; guard=1; fi; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      nginx wrk >/dev/null || echo "note: nginx/wrk not installed;" \
	      "benchmarks/http.py needs them (tests don't)"; \
	    if [ -n "$$guard" ]; then rm -f /usr/sbin/policy-rc.d; fi; \
	  else echo "note: nginx or wrk missing and not root; benchmarks/http.py needs them"; fi; fi
	touch $@

system-deps: $(STAMPS)/system-deps
bench-deps: $(STAMPS)/bench-deps

$(STAMPS)/venv: pyproject.toml | $(STAMPS)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.7,<2" numpy scipy rich matplotlib fastjsonschema pytest hypothesis pyperf \
	  orjson msgpack cbor2
	@# Ray: the distributed load agents (perflab http --agents; the [cluster] extra)
	$(PIP) install -q "ray>=2.40"
	touch $@

$(STAMPS)/build: $(STAMPS)/venv $(RUST_SOURCES) pyproject.toml | $(STAMPS)
	. $(VENV)/bin/activate && maturin develop -q
	touch $@

build: $(STAMPS)/build

demo: build
	$(PY) -m perflab run examples/serialization.py --budget 6s --json out/northwind.json

test: build system-deps test-rust test-python

# --examples: the speed probe (examples/speed.rs) is built too, so it can't rot.
test-rust:
	cd rust && $(CARGO) test -q -p perflab-engine --lib --examples

test-python: build
	$(PY) -m pytest tests

# Benchmarks need the optimised native core: one release build, then the debug
# build is redone by the next `make build`.
bench: $(STAMPS)/venv $(STAMPS)/bench-deps
	. $(VENV)/bin/activate && maturin develop -q --release
	rm -f $(STAMPS)/build
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(STAMPS) $(VENV) rust/target out
