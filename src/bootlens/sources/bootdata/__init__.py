"""Side format: boot-data files (grab-boot-data.sh: the kernel log with the machine's facts, systemd info and the kernel config)."""
