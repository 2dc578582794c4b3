"""Side format: systemd-analyze's outputs (time, blame, critical-chain, dump, plot) and the units' ordering."""
