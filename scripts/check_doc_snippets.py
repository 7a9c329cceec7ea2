#!/usr/bin/env python3
"""Keeps code shown in the docs equal to files that CI builds and runs ("examples are tests").

A fenced block in a docs/*.md file preceded by a line `<!-- snippet: PATH -->` must equal the lines
of PATH between `// snippet-begin` and `// snippet-end` (indentation removed as a block), or the
whole file when it has no markers.

    scripts/check_doc_snippets.py           check; exit 1 naming each stale snippet
    scripts/check_doc_snippets.py --write   rewrite the blocks from their files
"""
import pathlib
import re
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARK = re.compile(r"<!-- snippet: (\S+) -->\n```(\w*)\n(.*?)```", re.S)


def snippet(path):
    text = (ROOT / path).read_text()
    m = re.search(r"^[ \t]*// snippet-begin\n(.*?)^[ \t]*// snippet-end\n", text, re.S | re.M)
    return textwrap.dedent(m.group(1)) if m else text


def main():
    write = "--write" in sys.argv[1:]
    problems = []
    for doc in sorted((ROOT / "docs").glob("*.md")):
        text = doc.read_text()

        def replace(m):
            want = snippet(m.group(1))
            if m.group(3) != want:
                problems.append(f"{doc.relative_to(ROOT)}: the snippet of {m.group(1)} is stale")
            return f"<!-- snippet: {m.group(1)} -->\n```{m.group(2)}\n{want}```"

        new = MARK.sub(replace, text)
        if write and new != text:
            doc.write_text(new)
    if write:
        return 0
    for p in problems:
        print(f"check_doc_snippets: {p} (run scripts/check_doc_snippets.py --write)",
              file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
