#!/usr/bin/env python3
"""subst.py IN OUT KEY=VALUE... - replace @KEY@ in IN, write OUT executable.

Meson's configure_file does not keep a script's executable bit; this does."""
import os
import sys

src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()
for kv in sys.argv[3:]:
    key, _, value = kv.partition('=')
    text = text.replace('@%s@' % key, value)
with open(dst, 'w') as f:
    f.write(text)
os.chmod(dst, 0o755)
