#!/usr/bin/env python3
"""The rtmem run options for the heap an rtmem replay advised: prints
"--kind KIND --pool BYTES" from the replay's JSON (its verdict), or
nothing when it advised none (rtmem run's defaults then). make bench runs
the example control loop with them.

    python3 scripts/advised.py results/replay.json
"""
import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: advised.py REPLAY.json")
    with open(sys.argv[1]) as f:
        advised = json.load(f)["verdict"]["advised"]
    if advised and advised.get("origin", "rtmem") == "rtmem":
        print("--kind %s --pool %d" % (advised["kind"], advised["pool"]))


if __name__ == "__main__":
    main()
