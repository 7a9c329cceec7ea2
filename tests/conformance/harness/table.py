"""Prints the matrix: one row per producer, one column per consumer."""


def cell_text(producer, consumer, results, case_count):
    """'6/6', 'absent' or 'broken' for one cell."""
    if producer.state == "absent" or consumer.state == "absent":
        return "absent"
    if producer.state == "broken" or consumer.state == "broken":
        return "0/%d broken" % case_count
    result = results.get((producer.name, consumer.name))
    if result is None:
        return "not run"
    return "%d/%d" % (result.passed(), case_count)


def render(drivers, results, case_count):
    header = ["producer \\ consumer"] + [d.name for d in drivers]
    rows = [header]
    for p in drivers:
        rows.append([p.name] + [cell_text(p, c, results, case_count) for c in drivers])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                     for row in rows)
