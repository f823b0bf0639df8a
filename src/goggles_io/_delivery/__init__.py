"""The delivery floor: what every bounded buffer between a log call and a sink shares.

The policy (spill, then block, then drop: ADR 0025), the disk spool and its per-process space.
Only this floor opens a spool.
"""
