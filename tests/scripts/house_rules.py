#!/usr/bin/env python3
"""The house rules compiler/README.md states, checked on the source tree:
- inside compiler/ an include runs down the ladder or sideways within a folder, never up
  (the ladder is the list under "## The ladder" in compiler/README.md, bottom first);
- no source file (.cc, .h) under compiler, simulator, hardware, onnx_models, tests or bench
  passes 800 lines.
Exit 1 with one line per breach. Usage: house_rules.py SOURCE_ROOT"""
import os
import re
import sys

MAX_LINES = 800
AREAS = ["compiler", "simulator", "hardware", "onnx_models", "tests", "bench"]

# Includes that still run up the ladder, "file: included header": each is to be moved (the
# header down, or the code that needs it up), never added to. One no longer in the code fails
# the check too, so the list stays true.
KNOWN_UPWARD = set([
])


def ladder(root):
    """Folders bottom first: the README's lines '<n>. `folder/`: ...' under '## The ladder'."""
    text = open(os.path.join(root, "compiler", "README.md"), encoding="utf-8").read()
    section = text.split("## The ladder", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\d+\. `([a-z_]+)/`", section, re.M)


def sources(root, area):
    for base, dirs, files in os.walk(os.path.join(root, area)):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules" and d != "data")
        for f in sorted(files):
            if f.endswith((".cc", ".h")):
                yield os.path.join(base, f)


def main():
    root = sys.argv[1]
    order = ladder(root)
    rung = {folder: i for i, folder in enumerate(order)}
    breaches = []
    compiler = os.path.join(root, "compiler")
    for folder in sorted(os.listdir(compiler)):
        if os.path.isdir(os.path.join(compiler, folder)) and folder not in rung:
            breaches.append(f"compiler/{folder}/ is not on the ladder in compiler/README.md")
    seen = set()
    include = re.compile(r'^\s*#\s*include\s+"compiler/([a-z_]+)/([^"]+)"', re.M)
    for path in sources(root, "compiler"):
        rel = os.path.relpath(path, root)
        folder = rel.split(os.sep)[1]
        if folder not in rung:
            continue
        for m in include.finditer(open(path, encoding="utf-8").read()):
            target = m.group(1)
            if target in rung and rung[target] > rung[folder]:
                key = f"{rel}: compiler/{target}/{m.group(2)}"
                if key in KNOWN_UPWARD:
                    seen.add(key)
                else:
                    breaches.append(f"{rel}: includes compiler/{target}/{m.group(2)}, a higher floor than {folder}/")
    for key in sorted(KNOWN_UPWARD - seen):
        if os.path.exists(os.path.join(root, key.split(":")[0])):
            breaches.append(
                f"{key}: listed in KNOWN_UPWARD but no longer included; take it off the list")
    for area in AREAS:
        for path in sources(root, area):
            with open(path, encoding="utf-8", errors="replace") as f:
                n = sum(1 for _ in f)
            if n > MAX_LINES:
                breaches.append(f"{os.path.relpath(path, root)}: {n} lines, over {MAX_LINES}")
    for b in breaches:
        print(b)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
