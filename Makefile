# The README's two commands: `make demo` and `make test`. Both install what they need first.
PY ?= python3
PIP ?= $(PY) -m pip
DEMO_LOG ?= tests/data/corpus/qemu-arm64-uboot-initcall.grabserial-t.log
# rustup installs cargo here; Debian's cargo lands in /usr/bin
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: install rust demo test bench

# The native accelerator (native/, Rust) needs cargo at install time; without it bootlens still
# installs and runs its pure-Python implementation (same results, about 2.6x slower on big logs).
rust:
	@command -v cargo >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "cargo not found: installing Debian's rustc and cargo"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rustc cargo; \
	  else \
	    echo "cargo not found: bootlens will run without its native accelerator"; \
	  fi; }

install: rust
	$(PIP) install --quiet --disable-pip-version-check -e '.[test]'

demo: install
	bootlens analyze $(DEMO_LOG) --marker ready='APP READY'

test: install
	$(PY) -m mypy
	$(PY) -m pytest -q

bench: install
	$(PY) bench/bench_analyze.py
