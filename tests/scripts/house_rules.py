#!/usr/bin/env python3
"""The house rules compiler/README.md states, checked on the source tree:
- inside compiler/ an include runs down the ladder or sideways within a folder, never up
  (the ladder is the list under "## The ladder" in compiler/README.md, bottom first);
- nor does a link: a function declared in a folder's header (or .cc) is defined in that
  folder or below, not only in a higher one (see link_breaches for how it is read);
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


# A line at column 0 that starts no free-function declaration or definition.
NOT_A_FUNCTION = re.compile(r"(#|//|/\*|\*|}|{|\)|namespace\b|struct\b|class\b|enum\b|union\b|using\b|template\b|"
                            r"inline\b|constexpr\b|static\b|extern\b|typedef\b|friend\b|[A-Z][A-Z0-9_]*\()")


def first_parameter_type(params):
    """The first parameter's type, its name, qualifiers and namespaces dropped: 'const ops::OpContext& ctx' -> 'OpContext'."""
    p = params.split(",")[0].split("=")[0]
    words = [w.split("::")[-1] for w in re.findall(r"[\w:]+(?:<[^()]*>)?", p) if w != "const"]
    return " ".join(words[:-1] if len(words) > 1 else words)


def free_functions(path):
    """(name, first parameter type, is a definition) of each function at namespace scope. The
    house style writes them at column 0 (namespaces are not indented, members are): a line there
    that names `type name(` starts one, a declaration when `;` comes before `{`. Members defined
    as Class::name are skipped; a namespace qualifier (ops::name) is not a class."""
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line or line[0].isspace() or NOT_A_FUNCTION.match(line):
            i += 1
            continue
        text, j = line.split("//")[0], i
        while not re.search(r"[;{]", text) and j + 1 < len(lines) and j - i < 12:
            j += 1
            text += " " + lines[j].split("//")[0].strip()
        i = j + 1
        m = re.match(r"([^(=;{]*?)(?<![\w~])((?:[a-z_][a-z0-9_]*::)*)([a-z_][a-z0-9_]*)\s*\(([^;{]*)", text)
        end = re.search(r"[;{]", text)
        if not m or not end or not m.group(1).strip() or m.group(1).rstrip().endswith("::"):
            continue
        if re.search(r"\boperator\b", m.group(1)):
            continue
        yield m.group(3), first_parameter_type(m.group(4)), end.group(0) == "{"


def link_breaches(root, rung):
    """A function declared in a folder and defined (same name, same first parameter type) only
    in higher folders: the lower folder links to the higher one. A declaration with no
    definition found is left alone (defined outside compiler/, or written another way)."""
    declared, defined = [], {}
    for path in sources(root, "compiler"):
        rel = os.path.relpath(path, root)
        folder = rel.split(os.sep)[1]
        if folder not in rung:
            continue
        for name, first, is_definition in free_functions(path):
            if is_definition:
                defined.setdefault((name, first), []).append((rung[folder], rel))
            else:
                declared.append((rel, folder, name, first))
    breaches = []
    for rel, folder, name, first in declared:
        where = defined.get((name, first))
        if where and min(r for r, _ in where) > rung[folder]:
            places = ", ".join(sorted(set(p for _, p in where)))
            breaches.append(f"{rel}: declares {name}, defined only in {places}, a higher floor than {folder}/")
    return sorted(set(breaches))


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
    breaches.extend(link_breaches(root, rung))
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
