#!/usr/bin/env python3
"""extract-kernels.py - the OpenCL C sources held in the repository's tests
and examples, one file each, for the kernelparse fuzzer's seeds (record.sh).

C files: every run of adjacent string literals (as the compiler joins them),
escapes decoded.  Python files: every string literal, triple-quoted or not.
Kept when it holds 'kernel' (the parser's unit tests hold malformed ones
too: good seeds as well).

Usage: extract-kernels.py SOURCE_ROOT OUTDIR
"""
import ast
import hashlib
import os
import re
import sys

DIRS = ['examples', 'tests', 'kernelparse', 'tools']

C_TOKEN = re.compile(r'''
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")
  | (?P<char>'(?:[^'\\\n]|\\.)*')
  | (?P<space>\s+)
  | (?P<other>.)
''', re.S | re.X)

ESCAPES = {'n': '\n', 't': '\t', 'r': '\r', '0': '\0', '\\': '\\', '"': '"', "'": "'",
           'a': '\a', 'b': '\b', 'f': '\f', 'v': '\v', '?': '?'}


def unescape(body):
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != '\\':
            out.append(c)
            i += 1
            continue
        n = body[i + 1]
        if n == 'x':
            m = re.match(r'[0-9a-fA-F]+', body[i + 2:])
            out.append(chr(int(m.group(0), 16) & 0xff))
            i += 2 + len(m.group(0))
        elif n in '01234567':
            m = re.match(r'[0-7]{1,3}', body[i + 1:])
            out.append(chr(int(m.group(0), 8) & 0xff))
            i += 1 + len(m.group(0))
        else:
            out.append(ESCAPES.get(n, n))
            i += 2
    return ''.join(out)


def c_strings(text):
    """Runs of adjacent string literals (only whitespace and comments between)."""
    run = None
    for m in C_TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == 'string':
            lit = m.group(0)
            body = lit[lit.index('"') + 1:-1]
            run = (run or '') + unescape(body)
        elif kind in ('space', 'comment'):
            continue
        else:
            if run is not None:
                yield run
            run = None
    if run is not None:
        yield run


def py_strings(text):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def main():
    root, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    seen = set()
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                # C is read as latin-1, so that text and escapes alike are bytes.
                if name.endswith(('.c', '.h')):
                    enc = 'latin-1'
                    strings = c_strings(open(path, encoding=enc).read())
                elif name.endswith('.py'):
                    enc = 'utf-8'
                    strings = py_strings(open(path, encoding=enc).read())
                else:
                    continue
                for s in strings:
                    if 'kernel' not in s:
                        continue
                    data = s.encode(enc, errors='surrogateescape')
                    h = hashlib.sha1(data).hexdigest()
                    if h in seen:
                        continue
                    seen.add(h)
                    with open(os.path.join(out, h), 'wb') as f:
                        f.write(data)


if __name__ == '__main__':
    main()
