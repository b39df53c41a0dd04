#!/usr/bin/env python3
"""test_include_graph.py - tools/include-graph on tiny trees made here: one
whose folders depend one way (passes, with the counts expected, and is not
fooled by a header of the same name in two folders, an include in a comment
or an -I order), and the same tree with one include more, which makes a
cycle (must fail, naming it).

  test_include_graph.py TOOL
"""
import json
import os
import subprocess
import sys
import tempfile


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def run(tool, root):
    p = subprocess.run([sys.executable, tool, '-b', os.path.join(root, 'build'), root],
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check(cond, what, out):
    if not cond:
        print('FAIL: ' + what + '\n' + out)
        sys.exit(1)


def make_tree(root, cycle):
    # low/ uses nothing; mid/ uses low/; top/ uses mid/ and low/.
    write(root, 'low/util.h', '#define LOW_UTIL 1\n')
    write(root, 'low/low.c', '#include "util.h"\n')
    # (mid.c's -I path has top/ too, so that low.h's commented-out include
    # of top.h would be found if it were taken for one.)
    # mid has a util.h of its own: its files get that one (their folder
    # first), although low/ is on their -I path too.
    write(root, 'mid/util.h', '#define MID_UTIL 1\n')
    write(root, 'mid/mid.h', '#include "util.h"\n#include "low.h"\n')
    write(root, 'low/low.h', '/* an include in a comment is none:\n'
                             '#include "top.h"\n'
                             '*/\n'
                             '// #include "top.h"\n')
    write(root, 'mid/mid.c', '#include "mid.h"\n')
    write(root, 'top/top.h', '#define TOP 1\n')
    write(root, 'top/top.c', '#include "mid.h"\n#include "util.h"\n')
    # The cycle: low/ includes from top/ (through its -I path).
    write(root, 'low/back.c', '#include "top.h"\n' if cycle else '\n')
    db = [
        {'directory': root + '/build', 'file': '../low/low.c', 'command': 'cc -I../low -c ../low/low.c'},
        {'directory': root + '/build', 'file': '../low/back.c',
         'command': 'cc -I../low ' + ('-I../top ' if cycle else '') + '-c ../low/back.c'},
        {'directory': root + '/build', 'file': '../mid/mid.c',
         'arguments': ['cc', '-I', '../low', '-I../mid', '-I../top', '-c', '../mid/mid.c']},
        # top/ names mid/ first: "util.h" from top.c is mid's.
        {'directory': root + '/build', 'file': '../top/top.c',
         'command': 'cc -I../mid -I../low -c ../top/top.c'},
    ]
    write(root, 'build/compile_commands.json', json.dumps(db))


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as root:
        root = os.path.realpath(root)
        make_tree(root, cycle=False)
        rc, out, err = run(tool, root)
        check(rc == 0, 'a tree without a cycle failed (rc %d)' % rc, out + err)
        # mid.h -> low.h; top.c -> mid.h, mid/util.h; nothing else crosses.
        check('low          -> (nothing)' in out, 'low/ includes from nothing', out)
        check('mid          -> low (1)' in out, 'mid/ -> low/ once', out)
        check('top          -> mid (2)' in out, 'top/ -> mid/ twice', out)
        check('no cycle' in out, 'no cycle said', out)

        make_tree(root, cycle=True)
        rc, out, err = run(tool, root)
        check(rc == 1, 'a tree with a cycle did not fail (rc %d)' % rc, out + err)
        check('cycle: low -> top -> mid -> low' in err, 'the cycle named', out + err)
    print('ok')


if __name__ == '__main__':
    main()
