"""Helper program for test_shutdown: a loop inside GracefulShutdown, stopped by a real signal.

Prints ``ready`` once the handlers are installed, ``stopped <SIGNAL> <count>`` when the flag is
seen, and ``restored`` if the previous handlers are back after the block. With ``--wait-second``
it keeps looping after the first signal (printing ``waiting``) until a second signal raises
``KeyboardInterrupt``, then prints ``interrupted`` and exits 3.
"""

from __future__ import annotations

import signal
import sys
import time

from goggles_io import GracefulShutdown


def main() -> int:
    wait_second = "--wait-second" in sys.argv
    previous = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    try:
        with GracefulShutdown() as shutdown:
            print("ready", flush=True)
            while not shutdown:
                time.sleep(0.005)  # the program under test polls; the test itself never sleeps
            assert shutdown.signal is not None
            print(f"stopped {shutdown.signal.name} {shutdown.count}", flush=True)
            if wait_second:
                print("waiting", flush=True)
                while True:
                    time.sleep(0.005)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        return 3
    finally:
        now = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
        if now == previous:
            print("restored", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
