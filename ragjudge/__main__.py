"""``python -m ragjudge`` and the ``ragjudge`` command: ``console`` imports the command line
(about a second on a loaded machine) and runs it. A Ctrl-C or SIGTERM in that second, before
the command's own handlers are in place, ends the process with one line and exit 130 (SIGINT's
shell code), not a traceback from the middle of an import: nothing was read, called or written."""

import signal
import sys


def console() -> None:
    """Start the command line (``ragjudge.cli.console``); an interrupt while it is imported is
    exit 130 with one line."""

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)  # SIGTERM while importing: the same line and code as Ctrl-C
    try:
        from ragjudge.cli import console as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted while ragjudge was starting: nothing was read, called or written\n")
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
    run()


if __name__ == "__main__":
    console()
