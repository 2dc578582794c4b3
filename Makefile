# The README's two commands: `make demo` and `make test`. Both install what they need first.
PY ?= python3
PIP ?= $(PY) -m pip
# Debian packages: QEMU and U-Boot for the reference target (the kernel itself is fetched by
# bootlens), Chromium for the HTML report tests (driven by Playwright, never its own browser)
APT_PACKAGES ?= qemu-system-arm u-boot-qemu chromium
# rustup installs cargo here; Debian's cargo lands in /usr/bin
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: install rust system demo test bench fuzz

# The native accelerator (native/, Rust) needs cargo at install time; without it bootlens still
# installs and runs its pure-Python implementation (same results, about 3x slower on big logs).
rust:
	@command -v cargo >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "cargo not found: installing Debian's rustc and cargo"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rustc cargo; \
	  else \
	    echo "cargo not found: bootlens will run without its native accelerator"; \
	  fi; }

# QEMU and U-Boot for the reference target, when missing (needs root and apt)
system:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "missing Debian packages:$$missing (apt-get install them as root)"; fi; \
	fi

install: rust system
	$(PIP) install --quiet --disable-pip-version-check -e '.[test]'

# the demo boots with the kernel's own tracing on (initcalls, device probes, process fork/exec/exit),
# so that the report shows every row of the timeline
DEMO_TRACE ?= initcall_debug ignore_loglevel \
	trace_event=sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit tp_printk

demo: install
	bootlens target setup qemu-arm64
	rm -rf runs/demo
	bootlens run qemu-arm64 --repeat 3 --append "$(DEMO_TRACE)" -o runs/demo --report report.html

test: install
	$(PY) -m mypy
	$(PY) fuzz/run.py --seconds $(FUZZ_SHORT_S)
	$(PY) -m pytest -q

# Fuzzing (fuzz/run.py, atheris when installed): every parser, the recording reader, the advisor
# and every renderer, native and pure Python compared; a crash is saved to fuzz/crashes/, which
# tests/test_fuzz.py replays. `make test` runs it for a minute (before pytest, so that pytest's
# summary closes the output), `make fuzz` for FUZZ_RUNS inputs on every core (1,000,000 inputs
# of at most 4 KiB, one in 16 through the reports: about 70 minutes on 2 cores).
FUZZ_SHORT_S ?= 60
FUZZ_RUNS ?= 1000000
FUZZ_WORKERS ?= $(shell nproc)
fuzz: install
	$(PIP) install --quiet --disable-pip-version-check atheris || echo "atheris not installed: random mutator"
	$(PY) fuzz/run.py --runs $(FUZZ_RUNS) --seconds 86400 --workers $(FUZZ_WORKERS) --max-len 4096 --deep-every 16

bench: install
	$(PY) bench/bench_analyze.py
