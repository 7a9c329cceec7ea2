#!/usr/bin/env python3
"""Checks the layering of libbaton (docs/design.md, "Modules"): each folder of src/ may include
only the modules below it, public headers (include/baton/) include only each other, and hiredis
is used in src/broker/ only (every other module reaches Redis through broker/).

  scripts/check_layers.py        exit 1 and one line per violation, or exit 0

Test files (*_test.cpp, *_redistest.cpp, *_test_util.h) may also include the test harness.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

# module -> the modules its sources may include (besides itself and the public baton/ headers).
ALLOWED = {
    "core": set(),
    "broker": {"core"},
    "client": {"broker", "core"},
    "cron": {"client", "broker", "core"},
    "worker": {"broker", "core"},
    "inspect": {"broker", "core"},
    "scheduler": {"client", "cron", "broker", "core"},
}
# Outside src/: the programs built on libbaton. They may include any module, but not hiredis.
PROGRAMS = ["cli", "daemon", "collector", "console"]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def is_test(path):
    name = path.name
    return name.endswith(("_test.cpp", "_redistest.cpp", "_test_util.h"))


def sources(folder):
    return sorted(p for p in folder.rglob("*") if p.suffix in (".h", ".cpp"))


def main():
    problems = []
    src = ROOT / "src"
    modules = {p.name for p in src.iterdir() if p.is_dir()}
    for extra in sorted(modules - set(ALLOWED)):
        problems.append(f"src/{extra}/: a module missing from scripts/check_layers.py ALLOWED")
    for module, allowed in ALLOWED.items():
        for path in sources(src / module):
            rel = path.relative_to(ROOT)
            for kind, target in INCLUDE.findall(path.read_text()):
                if kind == "<":
                    if target.startswith("hiredis/") and module != "broker":
                        problems.append(f"{rel}: includes <{target}>: only src/broker/ talks to hiredis")
                    continue
                top = target.split("/", 1)[0]
                if top in ("baton", module) or top in allowed:
                    continue
                if top == "harness" and is_test(path):
                    continue
                if top in modules or top == "harness":
                    problems.append(f"{rel}: includes \"{target}\": {module}/ may include "
                                    f"{', '.join(sorted(allowed)) or 'no other module'}")
    for path in sources(ROOT / "include" / "baton"):
        rel = path.relative_to(ROOT)
        for kind, target in INCLUDE.findall(path.read_text()):
            if kind == '"' and not target.startswith("baton/"):
                problems.append(f"{rel}: public header includes internal \"{target}\"")
            if kind == "<" and target.startswith("hiredis/"):
                problems.append(f"{rel}: public header includes <{target}>")
    for program in PROGRAMS:
        for path in sources(ROOT / program):
            rel = path.relative_to(ROOT)
            for kind, target in INCLUDE.findall(path.read_text()):
                if kind == "<" and target.startswith("hiredis/"):
                    problems.append(f"{rel}: includes <{target}>: use src/broker/")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} violation(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
