#!/usr/bin/env python3
"""Prints the shape of the native core and the Java provider: the largest files, functions and
structs, and the `unsafe` blocks per module, against the targets of STYLE.md (a file ~800 lines, a
function ~80, a struct ~12 fields).

    python3 gradle/code-shape.py [--top N] [--over]

--over lists only what is above a target. Test modules (`tests.rs`, `#[cfg(test)] mod tests { }`)
are left out of the function and struct counts: they are read as sentences, not held as objects.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE_LINES, FN_LINES, STRUCT_FIELDS = 800, 80, 12


def blank_literals(text):
    """Returns text with comments, strings and char literals replaced by spaces (newlines kept), so
    that braces can be counted."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 8]) and (i == 0 or not text[i - 1].isalnum()):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + len(hashes) + 2)
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def block_end(code, open_at):
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def line_of(code, pos):
    return code.count("\n", 0, pos) + 1


def test_spans(code):
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", code):
        spans.append((m.start(), block_end(code, m.end() - 1)))
    return spans


def rust_items(path, rel):
    code = blank_literals(open(path, encoding="utf-8").read())
    tests = test_spans(code)
    in_test = lambda pos: any(a <= pos <= b for a, b in tests)
    fns, structs = [], []
    for m in re.finditer(r"\bfn\s+(\w+)[^;{]*?\{", code):
        if in_test(m.start()):
            continue
        end = block_end(code, m.end() - 1)
        fns.append((line_of(code, end) - line_of(code, m.start()) + 1, rel, line_of(code, m.start()), m.group(1)))
    for m in re.finditer(r"\bstruct\s+(\w+)(<[^{;(]*>)?\s*(where[^{]*)?\{", code):
        if in_test(m.start()):
            continue
        body = code[m.end():block_end(code, m.end() - 1)]
        depth, fields, field = 0, 0, False
        for part in re.split(r"([{}()<>\[\],])", body):
            if not part:
                continue
            if part in "{([<":
                depth += 1
            elif part in "})]>":
                depth -= 1
            elif part == "," and depth == 0:
                fields += field
                field = False
            elif depth == 0 and re.search(r"\w+\s*:", part):
                field = True
        fields += field
        structs.append((fields, rel, line_of(code, m.start()), m.group(1)))
    unsafe = len(re.findall(r"\bunsafe\s*(\{|fn\b|impl\b)", code))
    return fns, structs, unsafe, code.count("\n") + 1


def java_items(path, rel):
    code = blank_literals(open(path, encoding="utf-8").read())
    fns = []
    sig = r"(?:(?:public|protected|private|static|final|synchronized|native|abstract)\s+)+[\w<>\[\], ?.]+\s+(\w+)\s*\([^;{)]*\)[^;{]*\{"
    for m in re.finditer(sig, code):
        end = block_end(code, m.end() - 1)
        fns.append((line_of(code, end) - line_of(code, m.start()) + 1, rel, line_of(code, m.start()), m.group(1)))
    return fns, code.count("\n") + 1


def module_of(rel):
    parts = rel.split("/")
    if parts[:2] == ["native", "src"]:
        inner = parts[2:]
        if len(inner) == 1:
            return inner[0][:-3]
        if inner[0] == "core" and len(inner) > 2:
            return "core/" + inner[1]
        return inner[0]
    return parts[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=10, help="rows per table (default 10)")
    ap.add_argument("--over", action="store_true", help="only what is above a target")
    args = ap.parse_args()
    files, fns, structs, unsafe = [], [], [], {}
    for base, ext in (("native/src", ".rs"), ("java/src/main/java", ".java")):
        for dirpath, _, names in os.walk(os.path.join(ROOT, base)):
            for name in sorted(names):
                if not name.endswith(ext):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                if ext == ".rs":
                    f, s, u, lines = rust_items(path, rel)
                    structs += s
                    if u:
                        unsafe[module_of(rel)] = unsafe.get(module_of(rel), 0) + u
                    if name == "tests.rs":
                        f = []
                else:
                    f, lines = java_items(path, rel)
                fns += f
                files.append((lines, rel))

    def table(title, rows, limit, fmt):
        rows = sorted(rows, reverse=True)
        over = [r for r in rows if r[0] > limit]
        shown = over if args.over else rows[:args.top]
        print(f"\n{title} (target {limit}; {len(over)} above it)")
        for r in shown:
            print("  " + fmt(r))

    table("files, lines", files, FILE_LINES, lambda r: f"{r[0]:6d}  {r[1]}")
    table("functions, lines", fns, FN_LINES, lambda r: f"{r[0]:6d}  {r[1]}:{r[2]}  {r[3]}")
    table("structs, fields", structs, STRUCT_FIELDS, lambda r: f"{r[0]:6d}  {r[1]}:{r[2]}  {r[3]}")
    print("\nunsafe blocks, fns and impls per module")
    for module, count in sorted(unsafe.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {count:6d}  {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
