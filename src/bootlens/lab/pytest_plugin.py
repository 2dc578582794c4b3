"""The bootlens pytest plugin: boot time as a test result (entry point ``pytest11``).

A test asks for the ``boot_time`` fixture, boots a reference target (or hands over the
recordings or logs a labgrid test captured), and gets the analysis back; when the test carries
a budget, the boots are checked against it and a budget that fails fails the test, naming the
stage (or total, marker, initcall, ...) and the figure::

    @pytest.mark.boot_budget(total="9 s", stage={"bootloader": "1 s"})
    def test_boot_time(boot_time):
        m = boot_time.boot("qemu-arm64", repeat=3, uboot_env={"bootdelay": "0"})
        assert m.median("stage bootloader") < 1e9

    def test_labgrid_boot(boot_time, target):        # a labgrid test captured the console
        m = boot_time.analyze("console.rec", markers=["ready=login:"])

Budgets: the ``boot_time_budget`` ini option names a budget file (docs/budget.md) for every
test that uses the fixture; a ``boot_budget`` marker adds entries or overrides the file's (its
keywords are the file's keys: ``total``, ``stage``, ``marker``, ``initcall``, ``probe``,
``unit``, ``process``, ``statistic``; ``file=`` names another budget file). Each measurement's
figures (median, interval, boots) and each budget entry's verdict go into the JUnit XML as
properties (``record_property``), so ``--junitxml`` carries them to the CI's test report.

The boots go into the test's ``tmp_path`` (``boots/``, a run folder that ``bootlens
analyze``, ``report`` and ``check`` read), or into ``boot_time_dir``/<test name> when that ini
option is set (kept after the run, for the CI's artifacts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the plugin loads in every pytest run of the environment: import the analysis when used
    from ..timeline.analyze import BootAnalysis
    from .budget import Budget, Check, Entry
    from ..stats.figures import Stat

MARKER = "boot_budget"
INI_BUDGET = "boot_time_budget"
INI_DIR = "boot_time_dir"
PREFIX = "boot_time"  # of the JUnit properties


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(INI_BUDGET, "bootlens budget file (TOML, docs/budget.md) checked by the boot_time fixture; "
                  "relative to the rootdir", default="")
    parser.addini(INI_DIR, "folder to keep the boot_time fixture's boots in (one run folder per test); default: "
                  "the test's tmp_path", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(total=None, stage=None, marker=None, initcall=None, probe=None, unit=None, "
        "process=None, statistic=None, file=None): boot-time limits the boot_time fixture checks, e.g. "
        "total=\"9 s\", stage={\"bootloader\": \"1 s\"} (bootlens docs/budget.md)")


@dataclass(frozen=True, slots=True)
class Measurement:
    """Boots measured in a test: their analyses, each figure's statistics (total, stages,
    markers: as ``bootlens run --repeat`` names them), the run folder they were booted into
    (None for inputs given), the recordings that never reached the ready line, and the budget
    check (None without a budget)."""

    boots: tuple[BootAnalysis, ...]
    figures: tuple[Stat, ...]
    folder: Path | None = None
    not_ready: tuple[str, ...] = ()
    check: Check | None = None

    def stat(self, name: str) -> Stat | None:
        """The statistics of a figure: "total", "bootloader" or "stage bootloader", "marker ready"."""
        want = name.removeprefix("stage ").strip()
        for s in self.figures:
            n = s.name.strip()
            if n == want or (want == "total" and n.startswith("total (")):
                return s
        return None

    def median(self, name: str) -> float | None:
        """A figure's median in ns over the boots (None when no boot measured it)."""
        s = self.stat(name)
        return None if s is None else s.median


class BootTime:
    """What the ``boot_time`` fixture gives a test: :meth:`boot` a reference target, or
    :meth:`analyze` what a test captured; either checks the test's budget."""

    def __init__(self, budget: Budget | None, folder: Callable[[], Path],
                 record: Callable[[str, object], None]) -> None:
        self.budget = budget
        self._folder = folder
        self._record = record
        self._runs = 0

    def boot(self, target: str = "qemu-arm64", repeat: int = 1, *, uboot_env: Mapping[str, str] | None = None,
             append: str = "", cmdline: str | None = None, overlay: str | Path | None = None,
             ready: str | None = None, timeout_s: float = 300.0, check_budget: bool = True) -> Measurement:
        """Boot a reference target (``bootlens target setup TARGET`` first) ``repeat`` times,
        each a fresh QEMU from power-on to the ready line, with the changes given (U-Boot
        variables, kernel arguments, a root filesystem overlay folder), as ``bootlens run``
        does; then record the figures and check the budget."""
        from ..targets import qemu as tg
        from ..targets.base import READY_MARKER, BootConfig
        from ..capture.run_folder import RUN_META
        from ..targets.runs import run_target

        self._runs += 1
        folder = self._folder() / ("boots" if self._runs == 1 else f"boots-{self._runs}")
        if (folder / RUN_META).is_file():
            # this test's boots from an earlier session (boot_time_dir keeps the latest, as a CI
            # artifact): the plugin's own folder, replaced as pytest replaces its reports
            import shutil

            shutil.rmtree(folder)
        tf = tg.files(target)
        reference = tg.QemuTarget(tf, tg.kernel_cmdline(tf, cmdline, append), ready or READY_MARKER, timeout_s)
        config = BootConfig(uboot_env=tuple(dict(uboot_env or {}).items()),
                            overlay=Path(overlay) if overlay is not None else None)
        ra = run_target(reference, folder, repeat, config)
        not_ready = tuple(f"{Path(n.path).name}: {n.why}" for n in ra.not_ready)
        return self._measured(ra.analysis.boots, folder, not_ready, check_budget)

    def analyze(self, *inputs: str | Path, markers: Sequence[str] = (), check_budget: bool = True) -> Measurement:
        """Analyse recordings, logs or run folders a test captured (a labgrid test's console
        recording, say), as ``bootlens analyze`` would; ``markers`` as its --marker (NAME=REGEX);
        then record the figures and check the budget."""
        from ..timeline.inputs import analyze_inputs
        from ..core.options import MarkerSpec, ParseOptions

        opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
        groups = analyze_inputs([str(i) for i in inputs], opts)
        return self._measured(tuple(b for g in groups for b in g.analysis.boots), None, (), check_budget)

    def check(self, m: Measurement, budget: Budget | None = None) -> Check:
        """Check a measurement against ``budget`` (default: the test's), record each entry's
        verdict, and fail the test when an entry fails or a boot never reached ready."""
        from .budget import check

        b = budget or self.budget
        if b is None:
            raise pytest.UsageError("boot_time.check: no budget (a boot_budget marker, the boot_time_budget ini "
                                    "option, or budget=)")
        c = check(b, m.boots)
        for r in c.results:
            key = f"{PREFIX}.budget.{r.entry.label}"
            self._record(f"{key}.verdict", r.verdict.value)
            self._record(f"{key}.limit_s", round(r.entry.max_ns / 1e9, 6))
            if r.value_ns is not None:
                self._record(f"{key}.{r.entry.statistic}_s", round(r.value_ns / 1e9, 6))
        problems = [f"{r.figure}: {r.detail}" + "".join(f"\n    {ev}" for ev in r.evidence) for r in c.failures]
        problems += [f"never reached the ready line: {n}" for n in m.not_ready]
        if problems:
            pytest.fail(f"boot-time budget failed ({c.boots} boot{'s' if c.boots != 1 else ''}):\n  "
                        + "\n  ".join(problems), pytrace=False)
        return c

    def _measured(self, boots: Sequence[BootAnalysis], folder: Path | None, not_ready: tuple[str, ...],
                  check_budget: bool) -> Measurement:
        from ..stats.figures import statistics_of

        figures = tuple(statistics_of(boots))
        self._record(f"{PREFIX}.boots", len(boots))
        if folder is not None:
            self._record(f"{PREFIX}.folder", str(folder))
        for s in figures:
            key = f"{PREFIX}.{s.name.strip()}"
            self._record(f"{key}.median_s", round(s.median / 1e9, 6))
            if s.n >= 2:
                self._record(f"{key}.median_ci_s", f"{s.ci_low / 1e9:.6f}..{s.ci_high / 1e9:.6f}")
                self._record(f"{key}.median_ci_level", round(s.ci_level, 4))
        m = Measurement(tuple(boots), figures, folder, not_ready)
        if check_budget and self.budget is not None:
            return Measurement(m.boots, m.figures, folder, not_ready, self.check(m))
        if not_ready:
            pytest.fail("boots never reached the ready line:\n  " + "\n  ".join(not_ready), pytrace=False)
        return m


def budget_of_test(request: pytest.FixtureRequest) -> Budget | None:
    """The budget of the requesting test: the ini option's file, with the boot_budget marker's
    entries added (an entry for the same figure replaces the file's). A bad budget is a usage
    error naming its file and line, or the marker."""
    from .budget import Budget, budget_from_dict, read_budget
    from ..core.errors import BootlensError, ParseError

    config = request.config
    entries: dict[tuple[str, str], Entry] = {}
    sources: list[str] = []
    files: list[Path] = []
    ini = str(config.getini(INI_BUDGET) or "")
    if ini:
        files.append(config.rootpath / ini)
    mark = request.node.get_closest_marker(MARKER)
    kwargs = dict(mark.kwargs) if mark is not None else {}
    if "file" in kwargs:
        files.append(Path(request.node.path).parent / str(kwargs.pop("file")))
    try:
        for f in files:
            b = read_budget(str(f))
            entries.update({(e.kind, e.name): e for e in b.entries})
            sources.append(str(f))
        if kwargs:
            if mark is not None and mark.args:
                raise ParseError("@pytest.mark.boot_budget", 0, "takes keywords only (total=\"9 s\", stage={...})")
            b = budget_from_dict(kwargs, "@pytest.mark.boot_budget")
            entries.update({(e.kind, e.name): e for e in b.entries})
            sources.append(b.source)
    except ParseError as e:  # the marker has no lines: no ":0"
        where = f"{e.source}:{e.line_no}" if e.line_no else e.source
        raise pytest.UsageError(f"bootlens budget: {where}: {e.reason}") from None
    except BootlensError as e:
        raise pytest.UsageError(f"bootlens budget: {e}") from None
    if not entries:
        return None
    return Budget(" + ".join(sources), str(kwargs.get("statistic", "median")), tuple(entries.values()))


@pytest.fixture
def boot_time(request: pytest.FixtureRequest, record_property: Callable[[str, object], None]) -> BootTime:
    """Boot a bootlens reference target, or analyse what the test captured, and check the
    test's boot-time budget (marker ``boot_budget``, ini option ``boot_time_budget``)."""
    keep = str(request.config.getini(INI_DIR) or "")

    def folder() -> Path:
        if keep:
            d = request.config.rootpath / keep / _safe(request.node.nodeid)
            d.mkdir(parents=True, exist_ok=True)
            return d
        tmp: Path = request.getfixturevalue("tmp_path")
        return tmp

    return BootTime(budget_of_test(request), folder, record_property)


def _safe(nodeid: str) -> str:
    """A test's id as one folder name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in nodeid)[:120]
