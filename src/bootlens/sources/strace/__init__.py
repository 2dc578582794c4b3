"""Side format: strace and ltrace outputs of an application's start, and their place on a boot."""
