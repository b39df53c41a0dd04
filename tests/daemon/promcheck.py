#!/usr/bin/env python3
"""promcheck.py - a strict reader of Prometheus's text exposition format
(version 0.0.4, what node_exporter's textfile collector reads), for the
daemon suite where promtool is not installed.

    promcheck.py FILE [SERIES...]

Fails (exit 1, the reason on stderr) on anything the format does not
allow: a bad metric or label name, a label value with a bad escape, a
value that is not a number, a family's HELP or TYPE twice or TYPE after
its samples, a family's samples apart, a series twice, a counter not
named *_total or below 0, a missing final newline.  Also wants every
family to have HELP and TYPE (the daemon writes both).  Then prints the
value of each SERIES asked (as written in the file, e.g.
'vocl_connections_refused_total{reason="token"}'), one a line; a series
not there fails.
"""
import math
import re
import sys

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*'
TYPES = {'counter', 'gauge', 'histogram', 'summary', 'untyped'}


def fail(line_no, why):
    sys.exit('promcheck: line %d: %s' % (line_no, why))


def parse_labels(text, n):
    """'{a="x",b="y"}' -> (('a', 'x'), ('b', 'y')), strictly."""
    labels, i = [], 1
    while text[i] != '}':
        m = re.match(LABEL, text[i:])
        if not m:
            fail(n, 'bad label name in %r' % text)
        name = m.group(0)
        i += len(name)
        if text[i:i + 2] != '="':
            fail(n, 'label %s without ="' % name)
        i += 2
        value = ''
        while True:
            if i >= len(text):
                fail(n, 'label %s: unterminated value' % name)
            c = text[i]
            if c == '"':
                i += 1
                break
            if c == '\\':
                esc = text[i + 1:i + 2]
                if esc not in ('\\', '"', 'n'):
                    fail(n, 'label %s: bad escape \\%s' % (name, esc))
                value += '\n' if esc == 'n' else esc
                i += 2
                continue
            if c == '\n':
                fail(n, 'label %s: newline in value' % name)
            value += c
            i += 1
        if name in dict(labels):
            fail(n, 'label %s twice' % name)
        labels.append((name, value))
        if text[i] == ',':
            i += 1
        elif text[i] != '}':
            fail(n, 'expected , or } after label %s' % name)
    return tuple(labels), i + 1


def value_of(text, n):
    if text in ('NaN', '+Inf', '-Inf'):
        return float(text.replace('Inf', 'inf'))
    if not re.fullmatch(r'[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?', text):
        fail(n, 'not a number: %r' % text)
    return float(text)


def check(path):
    data = open(path, 'rb').read().decode('utf-8')
    if not data.endswith('\n'):
        fail(0, 'no newline at the end')
    helped, typed, sampled, series = {}, {}, set(), {}
    last = None  # the family of the last sample
    for n, line in enumerate(data[:-1].split('\n'), 1):
        if line.startswith('#'):
            m = re.fullmatch(r'# (HELP|TYPE) (' + NAME + r') (.*)', line)
            if not m:
                if re.match(r'# (HELP|TYPE)\b', line):
                    fail(n, 'malformed %r' % line)
                continue  # (a comment)
            kind, name, rest = m.groups()
            seen = helped if kind == 'HELP' else typed
            if name in seen:
                fail(n, '%s %s twice' % (kind, name))
            if name in sampled:
                fail(n, '%s %s after its samples' % (kind, name))
            if kind == 'TYPE' and rest not in TYPES:
                fail(n, 'unknown type %r' % rest)
            if kind == 'HELP' and not rest.strip():
                fail(n, 'empty HELP of %s' % name)
            seen[name] = rest
            continue
        if not line.strip():
            fail(n, 'blank line')
        m = re.match(NAME, line)
        if not m:
            fail(n, 'bad metric name in %r' % line)
        name = m.group(0)
        rest = line[len(name):]
        labels = ()
        if rest.startswith('{'):
            labels, used = parse_labels(rest, n)
            rest = rest[used:]
        parts = rest.split(' ')
        if len(parts) not in (2, 3) or parts[0] != '':
            fail(n, 'expected " VALUE [TIMESTAMP]" in %r' % line)
        value = value_of(parts[1], n)
        if len(parts) == 3 and not re.fullmatch(r'-?\d+', parts[2]):
            fail(n, 'bad timestamp %r' % parts[2])
        if name != last and name in sampled:
            fail(n, 'samples of %s apart' % name)
        if name not in typed or name not in helped:
            fail(n, '%s without HELP and TYPE before it' % name)
        if typed[name] == 'counter':
            if not name.endswith('_total'):
                fail(n, 'counter %s not named *_total' % name)
            if math.isnan(value) or value < 0:
                fail(n, 'counter %s below 0' % name)
        key = name + ('{' + ','.join('%s="%s"' % kv for kv in labels) + '}' if labels else '')
        if key in series:
            fail(n, 'series %s twice' % key)
        series[key] = parts[1]
        sampled.add(name)
        last = name
    for name in set(helped) | set(typed):
        if name not in sampled:
            fail(0, 'family %s has no sample' % name)
    return series


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    series = check(sys.argv[1])
    for want in sys.argv[2:]:
        if want not in series:
            sys.exit('promcheck: no series %s in %s' % (want, sys.argv[1]))
        print(series[want])


main()
