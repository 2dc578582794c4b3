"""Built-in rules, one per module; :func:`bootlens.advise.default_registry` imports them all."""
