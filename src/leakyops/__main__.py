"""``python -m leakyops``: the ``leakyops`` command (see :mod:`leakyops.cli`)."""

import sys

from leakyops.cli import main

if __name__ == "__main__":
    sys.exit(main())
