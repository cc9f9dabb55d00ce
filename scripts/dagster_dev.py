"""`make ui`: `dagster dev` that stops on Ctrl-C and on SIGTERM wherever it was started.

A shell without job control (a script, `make ui &`, nohup) starts its background commands with SIGINT ignored.
Python then installs no KeyboardInterrupt handler, and `dagster dev` maps SIGTERM onto SIGINT's handler, so
both were ignored: the webserver and daemon ran on for minutes. Restoring the default before exec lets
Python raise KeyboardInterrupt again, and `dagster dev` shuts its services down.
Usage: python scripts/dagster_dev.py [dagster dev options]
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # survives exec; SIG_IGN would too
    dagster = str(Path(sys.executable).parent / "dagster")
    os.execv(dagster, [dagster, "dev", *sys.argv[1:]])


if __name__ == "__main__":
    main()
