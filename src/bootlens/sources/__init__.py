"""Stage 3b, side files: inputs that are not a console log but add to a boot, one folder per
format (a sniff that tells it by content, a reader, and how it attaches to a boot):
systemd_analyze/, bootchart/, bootdata/, ftrace/, strace/, logic/. :mod:`.kinds` tells what an
input is; :mod:`.supplements` reads side files and attaches them to a boot.
"""
