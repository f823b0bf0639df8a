"""Across machines: each host forwards its events to a Redis stream; any process reads them back.

``settings`` parses ``GOGGLES_BROKER*``; ``entries`` is the wire form of one stream entry;
``forwarder`` is the host-side handler that XADDs; ``consumer`` reads through a consumer group
with reclaim and de-duplication. See ``docs/cross-machine.md`` and ADR 0017.
"""
