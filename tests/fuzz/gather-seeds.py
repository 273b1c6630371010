#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Seed corpora for the fuzz targets, taken at run time from the tests' own inputs, so that the
seeds follow the tests as they change: configuration files, plan files, OCI states, bundles'
config.json and annotations, duration strings, and proc connector datagrams (no sample files
exist for those: built here from the wire layout tests/unit/test-procmon-decode.c writes out).

    gather-seeds.py [--top DIR] TARGET OUT-DIR    write TARGET's seeds (one file each) to OUT-DIR
    gather-seeds.py [--top DIR] --check           every target has seeds; prints the counts

TARGET is a fuzz target's name (fuzz-conf, conf, ...). Seeds come from files in the repository
(YAML files, heredocs and printf'd files in the shell tests) and from the C string literals of
the unit tests (adjacent literals joined, C escapes decoded). A target without a rule here gets
no seeds and --check fails, so a new target cannot silently start from nothing."""

import argparse
import hashlib
import os
import re
import struct
import sys

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TARGETS = ("conf", "duration", "oci", "plan", "procmon", "yaml")


def read(path):
    with open(os.path.join(TOP, path), "rb") as f:
        return f.read()


def files(under, suffixes):
    out = []
    for root, dirs, names in os.walk(os.path.join(TOP, under)):
        dirs[:] = sorted(d for d in dirs if not d.startswith("build"))
        for n in sorted(names):
            if n.endswith(suffixes):
                out.append(os.path.relpath(os.path.join(root, n), TOP))
    return out


LITERAL = re.compile(rb'"((?:[^"\\\n]|\\.)*)"')
SEQUENCE = re.compile(rb'(?:"(?:[^"\\\n]|\\.)*"\s*)+')
ESCAPES = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"a": b"\a", b"b": b"\b", b"f": b"\f", b"v": b"\v",
           b"\\": b"\\", b'"': b'"', b"'": b"'", b"?": b"?", b"e": b"\x1b"}


def c_unescape(s):
    out, i = bytearray(), 0
    while i < len(s):
        c = s[i:i + 1]
        if c != b"\\":
            out += c
            i += 1
            continue
        n = s[i + 1:i + 2]
        if n == b"x":
            m = re.match(rb"[0-9a-fA-F]{1,2}", s[i + 2:])
            out.append(int(m.group(0), 16) if m else 0)
            i += 2 + (len(m.group(0)) if m else 0)
        elif n.isdigit():
            m = re.match(rb"[0-7]{1,3}", s[i + 1:])
            out.append(int(m.group(0), 8) & 0xff)
            i += 1 + len(m.group(0))
        else:
            out += ESCAPES.get(n, n)
            i += 2
    return bytes(out)


def c_strings(path):
    """Every C string expression in path: adjacent literals joined, escapes decoded. Macros between
    literals ("..." ID "...") end a sequence; that loses little for seeds."""
    text = read(path)
    text = re.sub(rb"/\*.*?\*/", b" ", text, flags=re.S)
    return [c_unescape(b"".join(LITERAL.findall(m.group(0)))) for m in SEQUENCE.finditer(text)]


HEREDOC = re.compile(rb"<<-?\s*'?(\w+)'?[^\n]*\n(.*?)\n\s*\1\n", re.S)
PRINTF = re.compile(rb"printf\s+'((?:[^'\\]|\\.)*)'\s*(?:[^>|\n]*)>\s*\"?\$tmp/[\w.-]+")


def heredocs(path):
    return [m.group(2) + b"\n" for m in HEREDOC.finditer(read(path))]


def printf_files(path):
    """printf 'FORMAT' >"$tmp/FILE" in a shell test: the file as written (no % conversions)."""
    out = []
    for m in PRINTF.finditer(read(path)):
        fmt = m.group(1)
        if re.search(rb"%[^%]", fmt):
            continue
        out.append(c_unescape(fmt.replace(b"%%", b"%")))
    return out


def is_plan(b):
    s = b.lstrip()
    return s.startswith(b"tasks") or re.match(rb"(#[^\n]*\n)*\s*(name|runtime|period|deadline|group|split)\s*,", s) is not None


def seeds_conf():
    out = [read(p) for p in files("conf", (".yaml",)) + files("tests", (".yaml", ".yml"))]
    out += [s for s in c_strings("tests/unit/test-conf.c") if b"\n" in s or b":" in s]
    for p in files("tests", (".sh",)):
        out += [h for h in heredocs(p) if b":" in h and not is_plan(h)]
    return out


def seeds_plan():
    out = [s for s in c_strings("tests/unit/test-plan.c") if b"\n" in s]
    for p in files("tests", (".sh",)):
        out += [h for h in heredocs(p) + printf_files(p) if is_plan(h)]
    return out


def seeds_oci():
    out = [read("oci/oci-hook.yaml")]
    template = read_state_template()
    for s in c_strings("tests/unit/test-oci-parse.c") + c_strings("tests/fuzz/fuzz-oci.c"):
        if s.lstrip().startswith(b"{"):
            out.append(s)                                   # an OCI state or a config.json
        elif b"org.edfd." in s and s.startswith(b'"'):
            out.append(template.replace(b"%s", s))          # annotations, in the tests' state
        elif b"groups:" in s or b"default-group" in s:
            out.append(s)                                   # the hook's configuration
    for p in files("tests", (".sh",)):
        out += [h for h in heredocs(p) + printf_files(p) if h.lstrip().startswith((b"{", b"groups:", b"default-group:"))]
    return out


def seeds_yaml():
    """The YAML reader's: every YAML text its three users' tests read (JSON is YAML too)."""
    return seeds_conf() + [s for s in seeds_plan() if s.lstrip().startswith(b"tasks")] + seeds_oci() + \
        [s for s in c_strings("tests/unit/test-yaml-tree.c") if b":" in s or b"[" in s]


def read_state_template():
    """test-oci-parse.c's state(): the OCI state its annotations go into."""
    for s in c_strings("tests/unit/test-oci-parse.c"):
        if b'"ociVersion"' in s and b"%s" in s:
            return s
    return b'{"ociVersion":"1.0.2","id":"0123456789ab","status":"creating","pid":4242,"bundle":"/run/b","annotations":{%s}}'


def seeds_duration():
    out = []
    for p in ("tests/unit/test-duration.c", "tests/unit/test-bandwidth.c", "tests/unit/test-params.c"):
        out += [s for s in c_strings(p) if 0 < len(s) <= 40 and re.match(rb"^[ \t0-9.+\-eE]*[0-9.][0-9.]*\s*[a-zA-Z%]*\s*$", s)]
    return out


def seeds_procmon():
    """Datagrams as the kernel sends them (tests/unit/test-procmon-decode.c's layout): nlmsghdr,
    cn_msg (CN_IDX_PROC, CN_VAL_PROC), proc_event. The first byte is the fuzz target's: sender and
    event array size (0x40: the kernel, 16 events)."""
    def msg(what, data, nl_type=3, seq=0):
        event = struct.pack("<IIQ", what, 0, 123456789) + struct.pack("<%dI" % len(data), *data)
        event = event.ljust(40, b"\0")
        body = struct.pack("<IIIIHH", 1, 1, seq, 0, len(event), 0) + event
        return struct.pack("<IHHII", 16 + len(body), nl_type, 0, seq, 0) + body

    fork = msg(0x1, [100, 100, 101, 101])
    exit_ = msg(0x80000000, [101, 101, 0, 17, 100, 100])
    exec_ = msg(0x2, [101, 101])
    comm = msg(0x200, [101, 101, 0x6c656873, 0x6c])
    ack = msg(0x0, [0])
    overrun = struct.pack("<IHHII", 16, 4, 0, 0, 0)
    out = [b"\x40" + m for m in (fork, exit_, exec_, comm, ack, overrun, fork + exit_, fork + exec_ + exit_)]
    out.append(b"\x43" + fork)    # another sender than the kernel
    out.append(b"\x00" + fork)    # no room for events
    return out


RULES = {"conf": seeds_conf, "duration": seeds_duration, "oci": seeds_oci, "plan": seeds_plan,
         "procmon": seeds_procmon, "yaml": seeds_yaml}


def gather(target):
    name = target[len("fuzz-"):] if target.startswith("fuzz-") else target
    rule = RULES.get(name)
    seen, out = set(), []
    for s in rule() if rule else []:
        if s and s not in seen:
            seen.add(s)
            out.append(s)
    return out


def main():
    global TOP
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", default=TOP)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("target", nargs="?")
    ap.add_argument("out", nargs="?")
    a = ap.parse_args()
    TOP = a.top
    if a.check:
        bad = 0
        fuzz_dir = os.path.join(TOP, "tests", "fuzz")
        targets = sorted(n[len("fuzz-"):-2] for n in os.listdir(fuzz_dir) if n.startswith("fuzz-") and n.endswith(".c"))
        for i, t in enumerate(targets, 1):
            n = len(gather(t))
            print("%s %d - fuzz-%s: %d seeds" % ("ok" if n >= 5 else "not ok", i, t, n))
            bad += n < 5
        print("1..%d" % len(targets))
        return 1 if bad else 0
    if not a.target or not a.out:
        ap.error("give TARGET and OUT-DIR, or --check")
    os.makedirs(a.out, exist_ok=True)
    seeds = gather(a.target)
    for s in seeds:
        with open(os.path.join(a.out, "seed-" + hashlib.sha1(s).hexdigest()), "wb") as f:
            f.write(s)
    print("%d seeds for %s" % (len(seeds), a.target))
    return 0 if seeds else 1


if __name__ == "__main__":
    sys.exit(main())
