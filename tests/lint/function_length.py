#!/usr/bin/env python3
"""Fails when a function body in the given files is longer than LIMIT lines.

DESIGN.md: "Apps are thin: a function over 80 lines in an app is a kernel or a helper
waiting to move." This counts the lines of every namespace-scope function (signature to
closing brace; lambdas and local classes inside count towards it) after stripping comments,
strings and preprocessor lines, by brace depth. A heuristic, not a C++ parser: it is exact
for this code base's formatting (clang-format style, one definition per brace pair).

  function_length.py LIMIT FILE_OR_DIR...
"""
import os
import re
import sys


def strip(src):
    src = re.sub(r'//[^\n]*', '', src)
    src = re.sub(r'(?m)^[ \t]*#.*$', '', src)
    src = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), src, flags=re.S)
    src = re.sub(r'R"\((.*?)\)"', lambda m: '""' + '\n' * m.group(0).count('\n'), src, flags=re.S)
    src = re.sub(r'"(\\.|[^"\\\n])*"', '""', src)
    src = re.sub(r"'(\\.|[^'\\\n])'", "''", src)
    return src


def long_functions(path, limit):
    s = strip(open(path, encoding='utf-8').read())
    stack, head, line, start = [], '', 1, 1
    for ch in s:
        if ch == '\n':
            line += 1
        if ch == '{':
            h = head.strip()
            if stack and any(k != 'ns' for k in stack):
                stack.append('in')
            elif re.match(r'^(namespace|extern)\b', h) or h == '':
                stack.append('ns')
            elif re.match(r'^(template\s*<.*>\s*)?(struct|class|enum|union)\b', h, re.S) and '(' not in h:
                stack.append('type')
            elif '(' in h and not h.endswith('='):
                stack.append(('fn', start, re.sub(r'\s+', ' ', h)[:100]))
            else:
                stack.append('other')
            head = ''
        elif ch == '}':
            k = stack.pop() if stack else None
            if isinstance(k, tuple) and line - k[1] + 1 > limit:
                yield line - k[1] + 1, k[1], k[2]
            head = ''
        elif ch == ';':
            head = ''
        else:
            if head.strip() == '' and not ch.isspace():
                start = line
            head += ch


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.stderr.write(__doc__)
        return 2
    limit = int(sys.argv[1])
    files = []
    for arg in sys.argv[2:]:
        if os.path.isdir(arg):
            for root, _, names in os.walk(arg):
                files += [os.path.join(root, n) for n in names if n.endswith(('.cpp', '.hpp'))]
        else:
            files.append(arg)
    bad = [(f, n, at, sig) for f in sorted(files) for n, at, sig in long_functions(f, limit)]
    for f, n, at, sig in bad:
        print(f"{f}:{at}: {n} lines (limit {limit}): {sig}")
    print(f"{len(files)} files, {len(bad)} functions over {limit} lines")
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
