"""Kernels built for the boot they serve (``optimize --rebuild-kernel``): a source tree's
initcalls and kbuild lines (:mod:`.sourcemap`), the Kconfig symbols a traced boot used
(:mod:`.derive`), a configuration from ``allnoconfig`` with their dependencies
(:mod:`.kconfig`), the build and its cache (:mod:`.build`)."""
