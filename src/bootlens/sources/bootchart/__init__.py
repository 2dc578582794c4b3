"""Side format: bootchart archives (bootchartd's header, ps and stat logs)."""
