"""The advisor reads the log lines once for all its rules (issue 14, part 4): advise() greps every
rule's declared needles (Rule.needles, Rule.needles_of, the shared helpers' NEEDLES) in one pass
before the rules run, so no rule makes a pass of its own. A rule that greps for a string it
does not declare makes an extra pass, and this test names it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import bootlens.core.lines
from conftest import WILD, need_shared
from bootlens.advise import Context, advise
from bootlens.timeline.analyze import analyze_paths

# real logs whose boots make many rules grep: initcall_debug, probes, systemd, U-Boot, root mounts
LOGS = ("02-remarkable-imx6-dmesg-systemd.log", "07-rk3566-rg353v-dmesg-6.6.log",
        "13-allwinner-h616-opizero2-spl2023-tfa-kernel6.1.log", "28-tegra3-mainline-5.13-dmesg-initramfs.log",
        "30-x86-amd-ms7721-archlinux-4.4-dmesg-systemd.log")


@pytest.mark.parametrize("name", LOGS)
def test_one_pass_per_boot(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = need_shared(WILD / name)
    boots = analyze_paths([str(path)]).boots
    passes: list[list[str]] = []
    real = bootlens.core.lines.grep

    def counted(texts: Sequence[str], needles: Sequence[str]) -> list[list[int]]:
        passes.append(list(needles))
        return real(texts, needles)

    monkeypatch.setattr(bootlens.core.lines, "grep", counted)
    for b in boots:
        passes.clear()
        advise(b, Context(), problems=[])
        assert len(passes) <= 1, f"{name} boot {b.boot.index}: passes beyond the first: {passes[1:]}"
