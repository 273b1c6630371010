#!/usr/bin/env python3
# Turn a text file into a C string constant: embed.py SYMBOL INPUT OUTPUT
import sys
sym, src, dst = sys.argv[1:4]
data = open(src, 'rb').read()
with open(dst, 'w') as f:
    f.write('/* Generated from %s by tools/embed.py. */\n' % src.split('/')[-1])
    f.write('const char %s[] =\n' % sym)
    for line in data.split(b'\n'):
        esc = ''.join(chr(c) if 32 <= c < 127 and c not in (34, 92, 63) else '\\%03o' % c for c in line + b'\n')
        f.write('        "%s"\n' % esc)
    f.write('        ;\n')
