# The README's two commands: `make demo` and `make test`. Both install what they need first.
PY ?= python3
PIP ?= $(PY) -m pip
DEMO_LOG ?= tests/data/corpus/qemu-arm64-uboot-initcall.grabserial-t.log

.PHONY: install demo test bench

install:
	$(PIP) install --quiet --disable-pip-version-check -e '.[test]'

demo: install
	bootlens analyze $(DEMO_LOG) --marker ready='APP READY'

test: install
	$(PY) -m mypy
	$(PY) -m pytest -q

bench: install
	$(PY) bench/bench_analyze.py
