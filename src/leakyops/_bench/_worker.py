"""One peer in a process of its own: ``python -m leakyops._bench._worker`` (the runner starts it).

Reads the job from stdin, a line of JSON (``{"peer": …, "min_time": …}``), then one case a
line, and answers each case with one JSON line on stdout as soon as it is timed
(``{"seconds": …}`` or ``{"skipped": reason}``), so that the runner can let the other peers
time the same case before the next; a peer that crashes on one case has reported the others.
The thread count comes from the environment the runner sets before anything is imported.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    job = json.loads(sys.stdin.readline())
    from ._peers import PEERS, Unavailable
    from ._timing import best_time

    prepare = PEERS[job["peer"]]
    for line in sys.stdin:
        c = json.loads(line)
        record = {"key": c["key"]}
        fn = None
        try:
            fn = prepare(c["op"], c["dtype"], tuple(c["shape"]))
            for _ in range(2):  # warm up: compile, fault pages in, start thread pools
                fn()
            record["seconds"] = best_time(fn, min_time=job["min_time"])
        except Unavailable as exc:
            record["skipped"] = str(exc)
        del fn
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
