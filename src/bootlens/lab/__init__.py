"""Boot time in a lab: targets reached through a board-farm engine (:mod:`.labgrid`), boot time
as a test result (:mod:`.pytest_plugin`, the ``pytest11`` entry point) and boot-time budgets
(:mod:`.budget`, ``bootlens check``)."""
