"""Backup: the driver's cycles, the per-partition task and the partition writer with its chunk commits."""
