#!/usr/bin/python3
"""Reference fire times from croniter (Debian's python3-croniter), for cron_differential_test.

Usage: croniter_reference.py START COUNT ZONE < expressions
  START  Unix seconds (UTC); fire times are strictly after it
  COUNT  how many fire times per expression
  ZONE   an IANA zone name ("UTC", "Asia/Tokyo")
Reads one cron line per input line (Baton syntax: an optional 6th field is a LEADING seconds
field) and prints, per line, the line, a tab, and COUNT Unix seconds separated by spaces.
Exits 3 when croniter cannot be imported, 2 on a croniter error (printed to stderr).
"""
import sys
from datetime import datetime, timezone

try:
    from croniter import croniter
except ImportError as error:  # the C++ test turns this into a skip
    print(f"croniter is not importable: {error}", file=sys.stderr)
    sys.exit(3)
from zoneinfo import ZoneInfo


def to_croniter(line: str) -> str:
    """croniter puts the optional seconds field last; Baton puts it first."""
    fields = line.split()
    if len(fields) == 6:
        fields = fields[1:] + fields[:1]
    return " ".join(fields)


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    start, count, zone = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    tz = timezone.utc if zone == "UTC" else ZoneInfo(zone)
    begin = datetime.fromtimestamp(start, tz)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            it = croniter(to_croniter(line), begin)
            times = [int(it.get_next(float)) for _ in range(count)]
        except Exception as error:  # report which line croniter refused
            print(f"{line}: {error!r}", file=sys.stderr)
            return 2
        print(line + "\t" + " ".join(str(t) for t in times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
