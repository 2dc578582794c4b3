"""Boots in a lab: targets that bootlens reaches through a board-farm engine (:mod:`.labgrid`)."""
