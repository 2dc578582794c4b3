# The README's two commands: `make demo` and `make test`. Both install what they need first.
# Everything runs from the project's own virtualenv, .venv (made with $(PY) -m venv), so that no
# package goes into the system's Python (Debian's is "externally managed", PEP 668) and the
# commands below never depend on what else is installed. Use it afterwards with
# `. .venv/bin/activate`, or run `.venv/bin/bootlens` directly.
PY ?= python3
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
# Debian packages: QEMU and U-Boot for the reference targets, mmdebstrap for the systemd one (kernels are fetched by
# bootlens), Chromium for the HTML report tests (driven by Playwright, never its own browser),
# python3-venv for .venv, tmux for the tests that read bootlens's output in a real terminal, postgresql for the
# server the history tests start (tests/pg_server.py), ser2net for the RFC 2217 console a labgrid exporter serves
# (tests/test_labgrid.py), sigrok-cli whose demo driver makes the logic-analyzer captures the tests read
# (tests/test_logic*.py), trace-cmd that turns a trace .dat into the text bootlens reads (tests/test_ftrace.py);
# for `optimize --rebuild-kernel` (bootlens.kbuild, tests/test_kbuild.py): Debian's kernel source (the version the
# reference target boots), the arm64 cross compiler, ccache, and the kernel build's own needs (flex, bison, bc,
# libssl-dev, libelf-dev)
APT_PACKAGES ?= python3-venv qemu-system-arm qemu-system-x86 u-boot-qemu mmdebstrap chromium tmux postgresql ser2net \
	sigrok-cli trace-cmd linux-source-6.1 gcc-aarch64-linux-gnu ccache flex bison bc libssl-dev libelf-dev
# the virtualenv's commands (bootlens, pytest, mypy) first; rustup installs cargo in ~/.cargo/bin,
# Debian's cargo lands in /usr/bin
export PATH := $(BIN):$(HOME)/.cargo/bin:$(PATH)

.PHONY: install venv rust system demo test bench fuzz

# The native core (native/, Rust) is required and needs cargo at install time (docs/performance.md:
# the hot formats are parsed in Rust only); as root on Debian it is installed, otherwise make stops.
rust:
	@command -v cargo >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "cargo not found: installing Debian's rustc and cargo"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rustc cargo; \
	  fi; }
	@command -v cargo >/dev/null 2>&1 || { \
	  echo "cargo not found: bootlens needs it to build its native core; install it with" \
	    "'apt-get install cargo rustc' (Debian, as root) or https://rustup.rs, then run make again" >&2; \
	  exit 1; }

# The Debian packages above, when missing (needs root and apt)
system:
	@command -v dpkg >/dev/null 2>&1 || { echo "not Debian: install$(foreach p,$(APT_PACKAGES), $(p)) or their equivalents"; exit 0; }; \
	missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "missing Debian packages:$$missing (apt-get install them as root)"; fi; \
	fi

# .venv, made again when it no longer runs (its Python was removed or upgraded), has no pip, or was
# made by another Python than $(PY) (looked up on the PATH without .venv/bin).
venv: system
	@PATH="$${PATH#$(BIN):}"; \
	base() { "$$1" -c 'import os, sys; print(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))' 2>/dev/null; }; \
	want=$$(base "$(PY)") || { echo "$(PY) does not run: name a Python >= 3.11 with PY=..."; exit 1; }; \
	"$(PY)" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "$(PY) is older than 3.11: name a newer one with PY=..."; exit 1; }; \
	if [ -x "$(BIN)/python" ] && [ "$$(base "$(BIN)/python")" = "$$want" ] \
	  && "$(BIN)/python" -m pip --version >/dev/null 2>&1; then exit 0; fi; \
	if [ -f "$(VENV)/pyvenv.cfg" ]; then echo "$(VENV) is broken or was made by another Python: making it again"; rm -rf "$(VENV)"; \
	elif [ -e "$(VENV)" ]; then echo "$(VENV) exists and is not a virtualenv: move it away or set VENV=..."; exit 1; fi; \
	echo "$(PY) -m venv $(VENV)"; "$(PY)" -m venv "$(VENV)" || { rm -rf "$(VENV)"; exit 1; }

# An editable install (src/ is what runs) with the test tools. The native module in src/ is built
# again each time (cargo recompiles only what changed): one left there by an earlier build (for
# another Python, or before cargo went away) would otherwise be imported.
install: rust venv
	rm -f src/bootlens/_scan*.so
	$(PIP) install --quiet -e '.[test,labgrid,kernel]'
	@# labgrid's pyserial-labgrid and pyserial both own serial/: the fork's files must win (docs/labgrid.md)
	$(PIP) install --quiet --force-reinstall --no-deps pyserial-labgrid
	@$(BIN)/bootlens --version

# the demo boots with the kernel's own tracing on (initcalls, device probes, process fork/exec/exit),
# so that the report shows every row of the timeline
DEMO_TRACE ?= initcall_debug ignore_loglevel \
	trace_event=sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit tp_printk

demo: install
	$(BIN)/bootlens target setup qemu-arm64
	rm -rf runs/demo
	$(BIN)/bootlens run qemu-arm64 --repeat 3 --append "$(DEMO_TRACE)" -o runs/demo --report report.html

test: install
	$(BIN)/python -m mypy
	$(BIN)/python fuzz/run.py --seconds $(FUZZ_SHORT_S)
	$(BIN)/python -m pytest -q

# Fuzzing (fuzz/run.py, atheris when installed): every parser, the recording reader, the advisor
# and every renderer, the native keyword index checked against Python's search; a crash is saved to fuzz/crashes/, which
# tests/test_fuzz.py replays. `make test` runs it for a minute (before pytest, so that pytest's
# summary closes the output), `make fuzz` for FUZZ_RUNS inputs on every core (1,000,000 inputs
# of at most 4 KiB, one in 16 through the reports: about 70 minutes on 2 cores). FUZZ_TARGET picks
# the harness: log (console logs, recordings, journals), or a side format (fuzz/run.py --help).
FUZZ_SHORT_S ?= 60
FUZZ_RUNS ?= 1000000
FUZZ_WORKERS ?= $(shell nproc)
FUZZ_TARGET ?= log
fuzz: install
	$(PIP) install --quiet atheris || echo "atheris not installed: random mutator"
	$(BIN)/python fuzz/run.py --target $(FUZZ_TARGET) --runs $(FUZZ_RUNS) --seconds 86400 --workers $(FUZZ_WORKERS) \
	  --max-len 4096 --deep-every 16

bench: install
	$(BIN)/python bench/bench_analyze.py
