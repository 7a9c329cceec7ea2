#!/usr/bin/python3
"""Brute-force reference for Baton's DST policy (docs/cron.md), for cron_differential_test.

Usage: dst_reference.py ZONE YEAR < expressions
Finds the UTC offset changes of ZONE in YEAR and, for each, scans every minute of the 36 hours
before and after it. Prints one line per (expression, change):
  <expression> TAB <window start> TAB <window end> TAB <fire times, space separated>
(Unix seconds; fire times in [start, end)). The policy, applied by brute force:
  - a real instant whose local time matches fires, except that for a fixed hour (no `*` and no
    step in the hour field) only the first occurrence of a local time fires;
  - for a fixed hour, a skipped local time that matches fires once, at the first instant after the
    gap (the transition instant).
Expressions are 5-field lines without `*/n` in a day field (the matcher uses croniter only to
expand the fields). Exits 3 when croniter cannot be imported.
"""
import sys
from datetime import datetime, timedelta, timezone

try:
    from croniter import croniter
except ImportError as error:
    print(f"croniter is not importable: {error}", file=sys.stderr)
    sys.exit(3)
from zoneinfo import ZoneInfo

MINUTE = timedelta(minutes=1)
HALF_WINDOW = timedelta(hours=36)


def matcher(line):
    """A function local naive datetime -> bool, with the Vixie day rule."""
    minute, hour, dom, month, dow = croniter(line).expanded

    def allowed(values):
        return None if values == ["*"] else {int(v) % 7 if values is dow else int(v) for v in values}

    sets = [allowed(v) for v in (minute, hour, dom, month, dow)]
    either = sets[2] is not None and sets[4] is not None

    def ok(values, value):
        return values is None or value in values

    def matches(t):
        if not (ok(sets[0], t.minute) and ok(sets[1], t.hour) and ok(sets[3], t.month)):
            return False
        dom_ok = ok(sets[2], t.day)
        dow_ok = ok(sets[4], t.isoweekday() % 7)
        return (dom_ok or dow_ok) if either else (dom_ok and dow_ok)

    return matches


def local(t, tz):
    return t.astimezone(tz).replace(tzinfo=None)


def transitions(tz, year):
    t = datetime(year, 1, 1, tzinfo=timezone.utc)
    end = datetime(year + 1, 1, 1, tzinfo=timezone.utc)
    step = timedelta(minutes=15)
    found = []
    while t < end:
        if t.astimezone(tz).utcoffset() != (t + step).astimezone(tz).utcoffset():
            u = t + MINUTE
            while u.astimezone(tz).utcoffset() == t.astimezone(tz).utcoffset():
                u += MINUTE
            found.append(u)
        t += step
    return found


def timeline(tz, start, end):
    """(instant, local time) for every minute in [start - 1 min, end)."""
    out = []
    t = start - MINUTE
    while t < end:
        out.append((t, local(t, tz)))
        t += MINUTE
    return out


def fires(line, minutes):
    matches = matcher(line)
    fixed_hour = not any(c in line.split()[1] for c in "*/")
    seen = set()
    out = []
    for (_, before), (t, now) in zip(minutes, minutes[1:]):
        if fixed_hour and now > before + MINUTE:  # t ends a gap
            gap = before + MINUTE
            while gap < now and not matches(gap):
                gap += MINUTE
            if gap < now:
                out.append(t)
        if matches(now) and not (fixed_hour and now in seen):
            if not out or out[-1] != t:
                out.append(t)
        seen.add(now)
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    tz, year = ZoneInfo(sys.argv[1]), int(sys.argv[2])
    lines = [line.strip() for line in sys.stdin if line.strip()]
    for change in transitions(tz, year):
        start, end = change - HALF_WINDOW, change + HALF_WINDOW
        minutes = timeline(tz, start, end)
        for line in lines:
            times = " ".join(str(int(t.timestamp())) for t in fires(line, minutes))
            print(f"{line}\t{int(start.timestamp())}\t{int(end.timestamp())}\t{times}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
