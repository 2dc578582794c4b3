"""Side format: logic analyzer captures (sigrok, Saleae CSV) and their alignment with the console."""
