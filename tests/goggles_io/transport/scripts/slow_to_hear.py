"""A producer whose client hears of its host's death ``delay_s`` late, driven from stdin.

The receiver thread notices the death at once (EOF) but tells the pipe only after ``delay_s``:
the window in which, before ADR 0057, the sender put a new batch on a new connection ahead of
the batches the dead host had not acknowledged. argv: path events delay_s. Attaches the
``OrderSink`` (5 ms per event), prints ``ready``; each ``log N`` line logs the next ``N``
scalars (step = index) and prints ``logged``; ``finish`` calls ``gg.finish()`` and prints
the FinishReport as JSON.
"""

from __future__ import annotations

import sys
import time

from order_sink import OrderSink
from report_line import print_report

import goggles_io as gg
from goggles_io._api.state import set_transport_factory
from goggles_io._transport.client.socket_client import SocketClient
from goggles_io._transport.settings import read_transport_settings

path, delay_s = sys.argv[1], float(sys.argv[2])


class SlowToHear(SocketClient):
    """Tells its pipe of a host's death ``delay_s`` after its receiver noticed it."""

    def _host_died(self) -> None:
        time.sleep(delay_s)
        super()._host_died()


set_transport_factory(lambda settings: SlowToHear(settings, read_transport_settings()))
gg.attach(OrderSink(path, delay_s=0.005), scopes=["global"])
log = gg.get_logger("order", with_metrics=True)
gg.flush(60)
print("ready", flush=True)
done = 0
for line in sys.stdin:
    words = line.split()
    if words[0] == "log":
        for i in range(done, done + int(words[1])):
            log.scalar("x", float(i), step=i)
        done += int(words[1])
        print("logged", flush=True)
    elif words[0] == "finish":
        print_report(gg.finish(), "order")
        break
