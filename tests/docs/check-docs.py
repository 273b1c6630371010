#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The documentation checked against the code it describes. Reports TAP.

    check-docs.py man-pages  MANDIR
    check-docs.py edfd       MANDIR EDFD
    check-docs.py edfctl     MANDIR EDFCTL
    check-docs.py config     MANDIR CONF_C EDFD
    check-docs.py dbus       MANDIR XML PROTOCOL_H DAEMON_DIR
    check-docs.py example    MANDIR XML
    check-docs.py live       MANDIR XML EDFD BUS_POLICY
    check-docs.py library    MANDIR EDFD_H LIBEDFD_C DOCS_MESON

Every check reads its facts from the sources of truth (edfctl --help, daemon/conf.c, protocol.h,
manager-bus.c's introspection, the running daemon) and looks for them in the man pages as a reader
sees them: built with scdoc and rendered with man(1), without hyphenation, so that a name broken
across lines or lost to a formatting mistake counts as missing. A check whose tool is missing
(scdoc, man, cc, dbus-daemon, root for SCHED_DEADLINE) is skipped with the reason.
"""

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

PAGES = ["edfd.8", "edfctl.1", "edfd-trace.1", "edfd-oci-hook.8", "edfd.yaml.5", "org.edfd.Admission1.5"]
# libedfd(3) and one page per function group; every function of edfd/edfd.h is in one SYNOPSIS.
LIBRARY_PAGES = ["libedfd.3", "edfd_open.3", "edfd_admit.3", "edfd_group_create.3", "edfd_snapshot_fetch.3",
                 "edfd_subscribe.3"]
PAGES += LIBRARY_PAGES


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, *diag):
        self.n += 1
        if cond:
            print(f"ok {self.n} - {name}")
        else:
            self.failed += 1
            print(f"not ok {self.n} - {name}")
            for d in diag:
                for line in str(d).splitlines() or [""]:
                    print(f"#   {line}")
        sys.stdout.flush()
        return cond

    def skip(self, name, why):
        self.n += 1
        print(f"ok {self.n} - {name} # SKIP {why}")
        sys.stdout.flush()

    def done(self):
        print(f"1..{self.n}")
        return 1 if self.failed else 0


def skip_all(why):
    print(f"1..0 # SKIP {why}")
    sys.exit(0)


# ---- building and reading the pages ----

def scdoc_build(src):
    """(roff, error text) for one .scd file."""
    scdoc = shutil.which("scdoc")
    with open(src, "rb") as f:
        p = subprocess.run([scdoc], stdin=f, capture_output=True, env=dict(os.environ, SOURCE_DATE_EPOCH="0"))
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0:
        return None, err or f"scdoc exited {p.returncode}"
    return p.stdout.decode(), err


def man_render(roff_path, width, warnings=False):
    """(text, stderr) of man -l, plain text."""
    args = ["man"]
    if warnings:
        args.append("--warnings")
    else:
        args += ["--nh", "--nj"]
    args += ["-l", roff_path]
    env = dict(os.environ, MANWIDTH=str(width), MAN_KEEP_FORMATTING="0", LC_ALL="C.UTF-8")
    env.pop("MANPAGER", None)
    env.pop("PAGER", None)
    p = subprocess.run(args, capture_output=True, env=env, stdin=subprocess.DEVNULL)
    text = p.stdout.decode(errors="replace")
    text = re.sub(r".\x08", "", text)                  # overstrike
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)         # SGR
    text = text.replace("\u2010", "-").replace("\u2212", "-").replace("\u2019", "'").replace("\u2018", "'")
    return text, p.stderr.decode(errors="replace")


class Page:
    """A rendered page: its text and its sections (heading -> lines)."""

    def __init__(self, text):
        self.text = text
        self.sections = {}
        cur = None
        for line in text.splitlines():
            if re.match(r"^[A-Z][A-Z0-9 -]*$", line):
                cur = line.strip()
                self.sections[cur] = []
            elif cur:
                self.sections[cur].append(line)

    def section(self, name):
        return "\n".join(self.sections.get(name, []))

    def terms(self, name, indent=7):
        """The definition-list terms of a section: lines indented exactly `indent` blanks."""
        pat = re.compile(r"^ {%d}(\S.*)$" % indent)
        return [m.group(1) for m in map(pat.match, self.sections.get(name, [])) if m]

    def entry(self, name, term_re, indent=7):
        """The body of the first term of section `name` matching term_re, up to the next term."""
        lines = self.sections.get(name, [])
        out, inside = [], False
        for line in lines:
            m = re.match(r"^ {%d}(\S.*)$" % indent, line)
            if m:
                if inside:
                    break
                inside = re.match(term_re, m.group(1)) is not None
                continue
            if inside:
                out.append(line.strip())
        return " ".join(out)


def load_page(mandir, page, tmp):
    """Page of docs/man/PAGE.scd, or raises with the reason."""
    roff, err = scdoc_build(os.path.join(mandir, page + ".scd"))
    if roff is None:
        raise RuntimeError(f"scdoc failed on {page}.scd: {err}")
    path = os.path.join(tmp, page)
    with open(path, "w") as f:
        f.write(roff)
    text, err = man_render(path, 160)
    if not text.strip():
        raise RuntimeError(f"man rendered nothing for {page}: {err}")
    return Page(text)


def need_tools(*tools):
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        skip_all("needs " + ", ".join(missing))


def word_in(word, text):
    return re.search(r"(?<![\w.-])" + re.escape(word) + r"(?![\w-])", text) is not None


# ---- man-pages: every page builds and renders without a warning ----

def check_man_pages(mandir):
    need_tools("scdoc", "man")
    t = Tap()
    found = sorted(f[:-4] for f in os.listdir(mandir) if f.endswith(".scd"))
    t.ok(found == sorted(PAGES), f"docs/man holds exactly the {len(PAGES)} pages",
         f"found {found}, expected {sorted(PAGES)}")
    with tempfile.TemporaryDirectory() as tmp:
        for page in PAGES:
            src = os.path.join(mandir, page + ".scd")
            if not os.path.exists(src):
                t.ok(False, f"{page}: builds", f"{src} does not exist")
                continue
            roff, err = scdoc_build(src)
            if not t.ok(roff is not None and not err.strip(), f"{page}: scdoc builds it without a message",
                        err):
                continue
            name, section = page.rsplit(".", 1)
            th = re.search(r'^\.TH "([^"]*)" "([^"]*)"', roff, re.M)
            t.ok(th is not None and th.group(1) == name and th.group(2) == section,
                 f"{page}: its title line names {name}({section})", th.group(0) if th else "no .TH line")
            path = os.path.join(tmp, page)
            with open(path, "w") as f:
                f.write(roff)
            for width in (80, 60):
                text, err = man_render(path, width, warnings=True)
                t.ok(text.strip() and not err.strip(),
                     f"{page}: man --warnings renders it at {width} columns without a warning",
                     err or "no output")
            p = Page(man_render(path, 160)[0])
            missing = [s for s in ("NAME", "DESCRIPTION", "SEE ALSO") if s not in p.sections]
            t.ok(not missing, f"{page}: has NAME, DESCRIPTION and SEE ALSO", f"missing: {missing}")
            # A library page names its functions, its own first ("edfd_open, edfd_close - ...").
            t.ok(re.match(re.escape(name) + (r"(,| - )" if section == "3" else " - "), p.section("NAME").strip()),
                 f"{page}: NAME starts with \"{name} - \"" + (" or \"" + name + ", \"" if section == "3" else ""),
                 p.section("NAME"))
            # Every page it refers to among ours exists.
            refs = set(re.findall(r"\b(edfd|edfctl|edfd-trace|edfd-oci-hook|edfd\.yaml|org\.edfd\.Admission1|libedfd|edfd_[a-z_]+)\((\d)\)",
                                  p.text))
            bad = sorted(f"{a}({b})" for a, b in refs if f"{a}.{b}" not in PAGES)
            t.ok(not bad, f"{page}: every edfd page it refers to exists", f"dangling: {bad}")
    return t.done()


# ---- edfd: every option, signal and exit status of the daemon is in edfd(8) ----

def check_edfd(mandir, edfd):
    need_tools("scdoc", "man")
    t = Tap()
    out = subprocess.run([edfd, "--help"], capture_output=True, text=True, check=True).stdout
    options = set()
    for line in out.splitlines():
        m = re.match(r"^\s+(-\S+(?: -\S+)?)", line)
        if m:
            options.update(re.findall(r"(?<![\w-])--?[a-zA-Z][a-zA-Z-]*", m.group(1)))
    t.ok(len(options) >= 10, "edfd --help lists its options", sorted(options))
    with tempfile.TemporaryDirectory() as tmp:
        p = load_page(mandir, "edfd.8", tmp)
    documented = set()
    for term in p.terms("OPTIONS"):
        documented.update(re.findall(r"(?<![\w-])(--?[a-zA-Z][a-zA-Z-]*)", term))
    for o in sorted(options):
        t.ok(o in documented, f"edfd(8) OPTIONS describes {o}", f"documented: {sorted(documented)}")
    for o in sorted(documented - options):
        t.ok(False, f"edfd(8) OPTIONS describes {o}, which edfd does not have")
    signals = " ".join(p.terms("SIGNALS"))
    for sig in re.findall(r"\bSIG[A-Z]+\b", out):
        t.ok(sig in signals, f"edfd(8) SIGNALS explains {sig}")
    for code in ("0", "1", "2"):
        t.ok(code in p.terms("EXIT STATUS"), f"edfd(8) EXIT STATUS explains {code}")
    env = " ".join(p.terms("ENVIRONMENT"))
    for var in ("DBUS_SYSTEM_BUS_ADDRESS", "NOTIFY_SOCKET", "WATCHDOG_USEC"):
        t.ok(var in env, f"edfd(8) ENVIRONMENT explains {var}")
    files = p.terms("FILES")
    m = re.search(r"--state-dir DIR\s+Keep the state in DIR \(default (\S+)\)", out)
    state = m.group(1) if m else "/run/edfd"
    for f in (state + "/state", state + "/lock", "/sys/fs/cgroup/edfd"):
        t.ok(any(x.startswith(f) for x in files), f"edfd(8) FILES explains {f}", f"terms: {files}")
    m = re.search(r"--config FILE\s+Read the configuration from FILE \(default (\S+?);", out)
    path = m.group(1) if m else None
    t.ok(path is not None and path.startswith("/"),
         "the configuration edfd reads by default (edfd --help) is an absolute path",
         f"edfd --help says \"{path}\": edfd would look for it relative to its working directory")
    t.ok(path is not None and path.endswith("/edfd/edfd.yaml") and any("/edfd/edfd.yaml" in x for x in files),
         "edfd(8) FILES explains the configuration file", f"edfd --help: {path}", f"terms: {files}")
    return t.done()


# ---- edfctl: every verb and every option of the binary is in edfctl(1), and nothing else ----

def edfctl_facts(edfctl):
    """(verbs, options, exit codes) from edfctl --help and edfctl help VERB."""
    out = subprocess.run([edfctl, "--help"], capture_output=True, text=True, check=True).stdout
    commands = out.split("Commands:", 1)[1].split("Options:", 1)[0]
    verbs = []
    for line in commands.splitlines():
        m = re.match(r"^  ([a-z]+)(?: ([a-z]+))?(?=\s|$)", line)
        if m and not line.startswith("      "):
            v = m.group(1)
            # "group create PATH": a subverb is a lower-case word after the verb.
            if m.group(2) and v == "group":
                v += " " + m.group(2)
            verbs.append(v)
    options = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][a-zA-Z-]*)", out.split("Options:",
                                                                             1)[1].split("\n\n")[0]))
    codes = set(re.findall(r"\b(\d+) (?:done|refused|bad usage|edfd not)", out))
    for v in sorted(set(x.split()[0] for x in verbs)):
        h = subprocess.run([edfctl, "help", v], capture_output=True, text=True, check=True).stdout
        for line in h.splitlines():
            m = re.match(r"^\s+(-\S+(?: -\S+)?)", line)
            if m:
                options.update(re.findall(r"(?<![\w-])--?[a-zA-Z][a-zA-Z-]*", m.group(1)))
        codes.update(re.findall(r"\b(12[67])\b", h))
    return verbs + ["help"], options, codes


def check_edfctl(mandir, edfctl):
    need_tools("scdoc", "man")
    t = Tap()
    verbs, options, codes = edfctl_facts(edfctl)
    t.ok(len(verbs) >= 9 and "admit" in verbs and "group create" in verbs,
         "edfctl --help lists its commands", f"found {verbs}")
    t.ok(len(options) >= 15, "edfctl --help and edfctl help VERB list the options",
         f"found {sorted(options)}")
    with tempfile.TemporaryDirectory() as tmp:
        p = load_page(mandir, "edfctl.1", tmp)
    commands = p.terms("COMMANDS")
    synopsis = p.section("SYNOPSIS")
    for v in verbs:
        t.ok(any(c == v or c.startswith(v + " ") for c in commands), f"edfctl(1) COMMANDS describes \"{v}\"",
             f"terms: {commands}")
        t.ok(re.search(r"edfctl \[?" + re.escape(v) + r"\b", synopsis) is not None,
             f"edfctl(1) SYNOPSIS shows \"edfctl {v}\"")
    # Each option term is "-g, --group=GROUP" or "--json".
    documented = set()
    for term in p.terms("OPTIONS"):
        documented.update(re.findall(r"(?<![\w-])(--?[a-zA-Z][a-zA-Z-]*)", term))
    for o in sorted(options):
        t.ok(o in documented, f"edfctl(1) OPTIONS describes {o}", f"documented: {sorted(documented)}")
    for o in sorted(documented - options):
        t.ok(False, f"edfctl(1) OPTIONS describes {o}, which edfctl does not have")
    # The short and long forms are paired as the binary pairs them.
    helptext = subprocess.run([edfctl, "help", "admit"], capture_output=True, text=True).stdout
    for short, long in re.findall(r"^\s+(-\w) (--[\w-]+)", helptext, re.M):
        t.ok(any(short + ", " + long in term for term in p.terms("OPTIONS")),
             f"edfctl(1) pairs {short} with {long}")
    exits = p.terms("EXIT STATUS")
    for c in sorted(codes, key=int):
        t.ok(c in exits, f"edfctl(1) EXIT STATUS explains {c}", f"terms: {exits}")
    t.ok("DBUS_SYSTEM_BUS_ADDRESS" in p.terms("ENVIRONMENT"),
         "edfctl(1) ENVIRONMENT names DBUS_SYSTEM_BUS_ADDRESS")
    # The examples use only real verbs and options.
    examples = p.section("EXAMPLES")
    shown = []
    for line in examples.splitlines():
        m = re.match(r"^\s+(?:\$ )?edfctl (.*)$", line)
        if not m:
            continue
        words = m.group(1).split(" -- ")[0].split()
        shown.append(words)
        used = [w.split("=")[0] for w in words if w.startswith("-")]
        bad = [w for w in used if w not in options]
        t.ok(words and words[0] in [v.split()[0] for v in verbs] and not bad,
             f"edfctl(1) example \"edfctl {m.group(1)[:40]}\" uses real verbs and options", f"unknown: {bad}")
    # Every verb of edfctl --help is shown at work in EXAMPLES, spelled out ("edfctl status", not a
    # bare "edfctl"; "edfctl group create", not "edfctl group").
    for v in verbs:
        t.ok(any(words[:len(v.split())] == v.split() for words in shown),
             f"edfctl(1) EXAMPLES shows \"edfctl {v}\"",
             "examples: " + "; ".join("edfctl " + " ".join(w) for w in shown))
    return t.done()


# ---- config: every key of the parser is in edfd.yaml(5), with a default and an example ----

def conf_keys(conf_c):
    src = open(conf_c).read()

    def table(name):
        """The key names of a key table (static const ConfKey NAME[] = { ... };), in order."""
        m = re.search(r'static const ConfKey %s\[\] = \{(.*?)\n\};' % name, src, re.S)
        if not m:
            raise RuntimeError(f"key table {name} not found in {conf_c}")
        return re.findall(r'(?:\.name = |SIMPLE\()"([a-z-]+)"', m.group(1))

    m = re.search(r'unknown_key\(c, k, "(bandwidth, reservations, rate)"\)', src) or \
        re.search(r'unknown_key\(c, k, "([a-z, -]+)"\)', src)
    limit_keys = [k.strip() for k in m.group(1).split(",")] if m else []
    return table("top_keys"), table("group_keys"), limit_keys


def check_config(mandir, conf_c, edfd):
    need_tools("scdoc", "man")
    t = Tap()
    top, group, limit = conf_keys(conf_c)
    t.ok(len(top) >= 9 and len(group) >= 9 and len(limit) >= 3, "conf.c names the keys it accepts",
         f"top {top}, group {group}, limits {limit}")
    with tempfile.TemporaryDirectory() as tmp:
        p = load_page(mandir, "edfd.yaml.5", tmp)

        def keys_of(section):
            return [re.match(r"^([a-z-]+):",
                             term).group(1) for term in p.terms(section) if re.match(r"^[a-z-]+:", term)]

        for section, keys, need_default in (("TOP-LEVEL KEYS", top, True), ("GROUPS", group, False),
                                            ("LIMITS", limit, False)):
            doc = keys_of(section)
            for k in keys:
                if not t.ok(k in doc, f"edfd.yaml(5) {section} describes {k}:", f"described: {doc}"):
                    continue
                body = p.entry(section, re.escape(k) + ":")
                if k != "groups" and k != "limits":
                    t.ok("Example:" in body, f"edfd.yaml(5) {section} gives an example of {k}:", body[:300])
                if need_default:
                    t.ok("Default" in body, f"edfd.yaml(5) {section} gives the default of {k}:", body[:300])
                # The term shows the type: a value placeholder or the literal choices.
                term = next(x for x in p.terms(section) if x.startswith(k + ":"))
                t.ok(len(term) > len(k) + 2, f"edfd.yaml(5) {section} shows the type of {k}:", term)
            for k in doc:
                t.ok(k in keys, f"edfd.yaml(5) {section} describes {k}:, which conf.c accepts",
                     f"conf.c: {keys}")
        # The fork policies and polkit modes, as conf.c spells them.
        for word in ("split", "inherit", "none", "auto", "required", "off", "unlimited"):
            t.ok(word_in(word, p.text), f"edfd.yaml(5) names the value {word}")
        for section in ("THE ADMISSION RULE", "FORK POLICIES", "UNITS", "EXAMPLES"):
            t.ok(section in p.sections, f"edfd.yaml(5) has {section}")

        # Every configuration shown in the page is one that edfd accepts.
        if not edfd or not os.access(edfd, os.X_OK):
            t.skip("the page's example configurations pass edfd --check-config", "no edfd binary")
        else:
            # A literal block of a top-level section is indented 11 columns in the rendered page; a
            # configuration is one whose first line is a key.
            blocks, cur, prev = [], None, ""
            for line in p.text.splitlines() + [""]:
                if cur is not None:
                    if line.startswith(" " * 11):
                        cur.append(line[11:])
                        continue
                    blocks.append(cur)
                    cur = None
                elif not prev.strip() and re.match(r"^ {11}[a-z][a-z-]*:( |$)", line):
                    cur = [line[11:]]
                prev = line
            blocks = [b for b in blocks if len(b) > 1]
            t.ok(len(blocks) >= 3, "edfd.yaml(5) shows example configurations", f"found {len(blocks)}")
            for b in blocks:
                path = os.path.join(tmp, "example.yaml")
                with open(path, "w") as f:
                    f.write("\n".join(b) + "\n")
                r = subprocess.run([edfd, "--check-config", path], capture_output=True, text=True)
                t.ok(r.returncode == 0, f"edfd --check-config accepts the example beginning \"{b[0]}\"",
                     "\n".join(b), r.stderr)
    return t.done()


# ---- dbus: every member of the interface and every error is in org.edfd.Admission1(5) ----

def xml_interface(root):
    for iface in root.iter("interface"):
        if iface.get("name") == "org.edfd.Admission1.Manager":
            return iface
    return None


def describe(iface):
    """The interface as comparable data: {kind: {name: description}}."""
    out = {"method": {}, "property": {}, "signal": {}}
    for el in iface:
        if el.tag == "method":
            out["method"][el.get("name")] = [(a.get("name"), a.get("type"), a.get("direction") or "in")
                                             for a in el.findall("arg")]
        elif el.tag == "signal":
            out["signal"][el.get("name")] = [(a.get("name"), a.get("type")) for a in el.findall("arg")]
        elif el.tag == "property":
            emits = [a.get("value") for a in el.findall("annotation")
                     if a.get("name") == "org.freedesktop.DBus.Property.EmitsChangedSignal"]
            out["property"][el.get("name")] = (el.get("type"), el.get("access"),
                                               emits[0] if emits else "true")
    return out


def check_dbus(mandir, xml, protocol_h, daemon_dir):
    need_tools("scdoc", "man")
    t = Tap()
    try:
        iface = xml_interface(ET.parse(xml).getroot())
    except ET.ParseError as e:
        t.ok(False, f"{xml} is well-formed XML", e)
        return t.done()
    if not t.ok(iface is not None, f"{xml} describes org.edfd.Admission1.Manager"):
        return t.done()
    d = describe(iface)
    with tempfile.TemporaryDirectory() as tmp:
        p = load_page(mandir, "org.edfd.Admission1.5", tmp)
    # METHODS: a subsection per method, "Name(t a, s b) -> (t c)".
    heads = {}
    for line in p.sections.get("METHODS", []):
        m = re.match(r"^   (\w+)\((.*?)\)(?: -> \((.*)\))?\s*$", line)
        if m:
            heads[m.group(1)] = (m.group(2), m.group(3) or "")

    def parse_args(s):
        return [tuple(a.strip().split(" ", 1)[::-1]) for a in s.split(",") if a.strip()]

    for name, args in d["method"].items():
        if not t.ok(name in heads, f"org.edfd.Admission1(5) METHODS describes {name}",
                    f"found {sorted(heads)}"):
            continue
        want_in = [(n, ty) for n, ty, di in args if di == "in"]
        want_out = [(n, ty) for n, ty, di in args if di == "out"]
        t.ok(parse_args(heads[name][0]) == want_in and parse_args(heads[name][1]) == want_out,
             f"org.edfd.Admission1(5) gives {name} the arguments of the XML",
             f"page: ({heads[name][0]}) -> ({heads[name][1]})", f"xml: in {want_in} out {want_out}")
    for name in sorted(set(heads) - set(d["method"])):
        t.ok(False, f"org.edfd.Admission1(5) METHODS describes {name}, which the XML does not have")
    # PROPERTIES: "Name (t)".
    props = dict(re.match(r"^(\w+) \((\w+)\)$",
                          x).groups() for x in p.terms("PROPERTIES") if re.match(r"^\w+ \(\w+\)$", x))
    for name, (ty, access, emits) in d["property"].items():
        t.ok(props.get(name) == ty, f"org.edfd.Admission1(5) PROPERTIES describes {name} ({ty})",
             f"page: {props.get(name)}")
    for name in sorted(set(props) - set(d["property"])):
        t.ok(False, f"org.edfd.Admission1(5) PROPERTIES describes {name}, which the XML does not have")
    # SIGNALS: "Name (t a, s b)".
    sigs = {}
    for x in p.terms("SIGNALS"):
        m = re.match(r"^(\w+) \((.*)\)$", x)
        if m:
            sigs[m.group(1)] = parse_args(m.group(2))
    for name, args in d["signal"].items():
        t.ok(sigs.get(name) == args,
             f"org.edfd.Admission1(5) SIGNALS describes {name} with the XML's arguments",
             f"page: {sigs.get(name)}", f"xml: {args}")
    for name in sorted(set(sigs) - set(d["signal"])):
        t.ok(False, f"org.edfd.Admission1(5) SIGNALS describes {name}, which the XML does not have")
    # ERRORS: every name of protocol.h, and no other.
    src = open(protocol_h).read()
    prefix = re.search(r'#define EDFD_ERROR_PREFIX "([^"]+)"', src).group(1)
    errors = [prefix + e for e in re.findall(r'#define EDFD_ERROR_\w+ EDFD_ERROR_PREFIX "(\w+)"', src)]
    t.ok(len(errors) >= 10, "protocol.h names the errors", errors)
    documented = [x for x in p.terms("ERRORS") if x.startswith(prefix)]
    for e in errors:
        t.ok(e in documented, f"org.edfd.Admission1(5) ERRORS describes {e}")
    for e in sorted(set(documented) - set(errors)):
        t.ok(False, f"org.edfd.Admission1(5) ERRORS describes {e}, which protocol.h does not define")
    # The names the page's header gives are protocol.h's.
    for macro in ("EDFD_BUS_NAME", "EDFD_BUS_PATH", "EDFD_BUS_INTERFACE"):
        value = re.search(r'#define %s "([^"]+)"' % macro, src).group(1)
        t.ok(value in p.section("SYNOPSIS"), f"org.edfd.Admission1(5) SYNOPSIS names {value} ({macro})")
    # Every reason the daemon puts in a signal is explained under SIGNALS.
    reasons = set()
    for f in sorted(glob.glob(os.path.join(daemon_dir, "manager*.c"))):
        for line in open(f):
            call = re.search(r"(manager_bus_emit_(added|removed|changed)|release_books|manager_release)\(", line)
            if call and not re.match(r"^\w", line):
                reasons.update(re.findall(r'"([a-z]+)"', line))
    t.ok(len(reasons) >= 7, "manager.c emits signals with reasons", sorted(reasons))
    signals_text = p.section("SIGNALS")
    for r in sorted(reasons):
        t.ok(word_in(r, signals_text), f"org.edfd.Admission1(5) SIGNALS explains the reason \"{r}\"")
    # The units are stated.
    for fact in ("1048576", "nanoseconds"):
        t.ok(fact in p.section("UNITS"), f"org.edfd.Admission1(5) UNITS says {fact}")
    # The list entries end in an a{sv}; the page states the rule, and every key the daemon puts
    # there ("key", "type", in manager-bus.c) is described with its type under METHODS.
    for method in ("ListReservations", "ListGroups"):
        out = [ty for _, ty, di in d["method"].get(method, []) if di == "out"]
        t.ok(len(out) == 1 and out[0].endswith("a{sv})"), f"{method}'s entries end in an a{{sv}}", out)
    rule = " ".join(p.section("EXTENSIBLE ENTRIES").split())
    t.ok("ignores every other key" in rule and "without changing the signature" in rule,
         "org.edfd.Admission1(5) EXTENSIBLE ENTRIES states the rule for unknown keys and new keys", rule)
    bus_c = open(os.path.join(daemon_dir, "manager-bus.c")).read()
    keys = re.findall(r'"([a-z_]+)",\s*"([a-z])",', bus_c)
    t.ok(len(keys) >= 3, "manager-bus.c puts keys in the entries' a{sv}", keys)
    methods_text = p.section("METHODS")
    for key, ty in keys:
        t.ok(re.search(r"^ *%s \(%s\)$" % (re.escape(key), ty), methods_text, re.M) is not None,
             f"org.edfd.Admission1(5) METHODS describes the key {key} ({ty})")
    return t.done()


# ---- example: the sd-bus program of org.edfd.Admission1(5) compiles ----

def extract_example(p):
    """The C program of EXAMPLES, as the reader sees it."""
    lines = p.sections.get("EXAMPLES", [])
    start = next((i for i, l in enumerate(lines) if re.match(r"^ {11}(/\*|#include)", l)), None)
    if start is None:
        return None
    code = []
    for l in lines[start:]:
        if l.strip() and not l.startswith(" " * 11):
            break
        code.append(l[11:])
    return "\n".join(code).rstrip() + "\n"


def build_example(mandir, tmp):
    """(binary path or None, diagnostic)."""
    p = load_page(mandir, "org.edfd.Admission1.5", tmp)
    code = extract_example(p)
    if not code:
        return None, "no C program in EXAMPLES"
    src = os.path.join(tmp, "admit.c")
    with open(src, "w") as f:
        f.write(code)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libsystemd"], capture_output=True, text=True)
    if flags.returncode != 0:
        return None, "pkg-config: " + flags.stderr
    exe = os.path.join(tmp, "admit")
    cc = os.environ.get("CC", "cc")
    r = subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-o", exe,
                        src] + flags.stdout.split(),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr + "\n" + code
    return exe, ""


def check_example(mandir, xml):
    need_tools("scdoc", "man", "pkg-config", os.environ.get("CC", "cc"))
    if subprocess.run(["pkg-config", "--exists", "libsystemd"]).returncode != 0:
        skip_all("needs libsystemd's pkg-config file (libsystemd-dev)")
    t = Tap()
    with tempfile.TemporaryDirectory() as tmp:
        p = load_page(mandir, "org.edfd.Admission1.5", tmp)
        code = extract_example(p)
        t.ok(code and "sd_bus_call_method" in code and "main(" in code,
             "org.edfd.Admission1(5) shows a C program that calls edfd with sd-bus", code or "none found")
        t.ok("pkg-config --cflags --libs libsystemd" in p.section("EXAMPLES"),
             "org.edfd.Admission1(5) says how to build it")
        exe, why = build_example(mandir, tmp)
        t.ok(exe is not None, "the C program compiles with -Wall -Wextra -Werror against libsystemd", why)
        # It calls what the interface has, with the XML's signatures.
        methods = describe(xml_interface(ET.parse(xml).getroot()))["method"]
        calls = re.findall(r'"(\w+)",\s*&error,\s*[^,]+,\s*"(\w*)"', code or "")
        t.ok(len(calls) >= 2, "the C program makes method calls", code)
        for method, sig in calls:
            want = "".join(ty for _, ty, di in methods.get(method, []) if di == "in")
            t.ok(method in methods and sig == want, f"the C program calls {method} with the XML's signature",
                 f"program: \"{sig}\"", f"xml: \"{want}\"" if method in methods else "xml: no such method")
    return t.done()


# ---- library: the pages of libedfd against edfd/edfd.h and the library's error table ----

def norm(decl):
    return re.sub(r"\s+", " ", decl).replace("( ", "(").replace(" )", ")").strip()


def header_prototypes(header):
    """{function name: its prototype, normalized} of edfd/edfd.h, the static inline helpers too
    (their prototype ending in ';' as a SYNOPSIS shows it)."""
    text = re.sub(r"/\*.*?\*/", "", open(header).read(), flags=re.S)
    protos = {}
    for m in re.finditer(r"^((?:static inline )?[a-z_][\w \*]*?\b(edfd_\w+)\([^;{)]*\))\s*[;{]", text, re.M):
        if m.group(1).startswith("typedef"):
            continue
        protos[m.group(2)] = norm(m.group(1)) + ";"
    return protos


def synopsis_prototypes(p):
    """{name: prototype} of the function declarations in a rendered page's SYNOPSIS."""
    out = {}
    text = "\n".join(l for l in p.section("SYNOPSIS").splitlines() if not l.strip().startswith("#"))
    for decl in re.findall(r"[^;{}]*?\bedfd_\w+\([^;()]*\);", text):
        decl = norm(decl)
        if decl.startswith("typedef"):
            continue
        m = re.search(r"\b(edfd_\w+)\(", decl)
        out[m.group(1)] = decl
    return out


def error_table(libedfd_c, protocol_h):
    """[(D-Bus error name, errno name)] of libedfd.c's error_names table, the macros resolved
    through protocol.h and sd-bus's headers."""
    defs = {}
    for path in [protocol_h] + glob.glob("/usr/include/systemd/sd-bus*.h"):
        for m in re.finditer(r'^#define\s+(\w+)\s+(?:(\w+)\s+)?"([^"]*)"', open(path).read(), re.M):
            defs[m.group(1)] = (defs.get(m.group(2), "") if m.group(2) else "") + m.group(3)
    body = re.search(r"error_names\[\]\s*=\s*\{(.*?)\};", open(libedfd_c).read(), re.S).group(1)
    return [(defs.get(name, name), errnum) for name, errnum in re.findall(r"\{\s*(\w+),\s*(E\w+)\s*\}", body)]


def scd_error_rows(src):
    """{errno: the D-Bus name cell} of the table in libedfd.3.scd's ERRORS section."""
    text = open(src).read()
    section = text.split("# ERRORS", 1)[1].split("\n# ", 1)[0]
    rows = {}
    for m in re.finditer(r"^\|\s+\*(E\w+)\*\n:\s+(.*)$", section, re.M):
        rows[m.group(1)] = m.group(2).replace("\\\\", "")
    return rows


def check_library(mandir, header, libedfd_c, docs_meson):
    need_tools("scdoc", "man")
    t = Tap()
    protos = header_prototypes(header)
    t.ok(len(protos) > 50, f"edfd/edfd.h declares the library's functions ({len(protos)} found)")
    seen = {}
    with tempfile.TemporaryDirectory() as tmp:
        pages = {page: load_page(mandir, page, tmp) for page in LIBRARY_PAGES}
        for page, p in pages.items():
            for name, decl in synopsis_prototypes(p).items():
                seen.setdefault(name, []).append(page)
                t.ok(protos.get(name) == decl, f"{page}: the SYNOPSIS declares {name} as edfd/edfd.h does",
                     f"page:   {decl}", f"header: {protos.get(name, '(no such function)')}")
        missing = sorted(n for n in protos if n not in seen)
        t.ok(not missing, f"every function of edfd/edfd.h is in the SYNOPSIS of a library page",
             f"missing: {missing}")
        twice = sorted(f"{n} ({', '.join(v)})" for n, v in seen.items() if len(v) > 1)
        t.ok(not twice, "no function is in two SYNOPSIS sections", f"twice: {twice}")
        # Every function a page names in NAME is its own and opens the page (docs/meson.build's aliases).
        aliases = {}
        block = re.search(r"man_aliases = \{(.*?)\n\}", open(docs_meson).read(), re.S).group(1)
        for target, names in re.findall(r"'(\w+)'\s*:\s*\[(.*?)\]", block, re.S):
            for n in re.findall(r"'(\w+)'", names):
                aliases[n] = target
        for page, p in pages.items():
            name = page.rsplit(".", 1)[0]
            if name == "libedfd":
                continue
            named = [n.strip() for n in p.section("NAME").split(" - ", 1)[0].replace("\n", " ").split(",")]
            own = set(synopsis_prototypes(p))
            t.ok(all(n in own for n in named), f"{page}: NAME names only functions of its SYNOPSIS",
                 f"named: {named}", f"synopsis: {sorted(own)}")
            want = {n: name for n in named if n != name}
            got = {n: tgt for n, tgt in aliases.items() if tgt == name}
            t.ok(want == got, f"{page}: each function in NAME but the first has a man alias to it",
                 f"NAME: {sorted(want)}", f"docs/meson.build: {sorted(got)}")
        # libedfd(3)'s ERRORS table is the library's own table.
        protocol_h = os.path.join(os.path.dirname(header), "..", "shared", "protocol.h")
        table = error_table(libedfd_c, protocol_h)
        rows = scd_error_rows(os.path.join(mandir, "libedfd.3.scd"))
        t.ok(len(table) > 15, f"libedfd.c maps D-Bus errors to errno ({len(table)} entries)")
        for dbus_name, errnum in table:
            prefix, short = dbus_name.rsplit(".", 1)
            cell = rows.get(errnum, "")
            t.ok(short in cell and prefix.split(".Error")[0] in cell,
                 f"libedfd(3) ERRORS: {errnum} is {dbus_name}", f"the row of {errnum}: {cell or '(none)'}")
        code = open(libedfd_c).read()
        mapped = {e for _, e in table}
        for errnum in rows:
            t.ok(errnum in mapped or re.search(r"\b" + errnum + r"\b", code),
                 f"libedfd(3) ERRORS: {errnum} is an errno the library gives")
        # The EXAMPLE of libedfd(3) compiles against the header.
        cc = os.environ.get("CC", "cc")
        code = extract_section_code(pages["libedfd.3"], "EXAMPLE")
        if not shutil.which(cc):
            t.skip("libedfd(3)'s EXAMPLE compiles", f"no {cc}")
        elif not code:
            t.ok(False, "libedfd(3) has a C program in EXAMPLE")
        else:
            inc = os.path.join(tmp, "include", "edfd")
            os.makedirs(inc)
            shutil.copy(header, inc)
            src = os.path.join(tmp, "example.c")
            with open(src, "w") as f:
                f.write(code)
            r = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                                "-I", os.path.join(tmp, "include"), src], capture_output=True, text=True)
            t.ok(r.returncode == 0, "libedfd(3)'s EXAMPLE compiles with -Wall -Wextra -Werror against edfd/edfd.h",
                 r.stderr, code)
    return t.done()


def extract_section_code(p, section):
    """The C program of a section, as the reader sees it (indented 11 blanks)."""
    lines = p.sections.get(section, [])
    start = next((i for i, l in enumerate(lines) if re.match(r"^ {11}(/\*|#include)", l)), None)
    if start is None:
        return None
    code = []
    for l in lines[start:]:
        if l.strip() and not l.startswith(" " * 11):
            break
        code.append(l[11:])
    return "\n".join(code).rstrip() + "\n"


# ---- live: the XML is what the daemon introspects; the example works against it ----

BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={sock}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_type="method_call" send_destination="org.freedesktop.DBus"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
  </policy>
  <!-- What the shipped policy says about edfd's name, as on a real system bus. -->
  <include>{policy}</include>
</busconfig>
"""


def wait_for(pred, seconds):
    """Poll pred until it is true or `seconds` pass: start-up, not a measurement."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def check_live(mandir, xml, edfd, policy):
    need_tools("dbus-daemon", "busctl")
    if not os.access(edfd, os.X_OK):
        skip_all(f"no edfd binary at {edfd}")
    if os.geteuid() != 0:
        skip_all("edfd must own org.edfd.Admission1, which the shipped D-Bus policy allows root alone")
    t = Tap()
    procs = []
    tmp = tempfile.mkdtemp(prefix="edfd-docs.")
    os.chmod(tmp, 0o711)
    try:
        sock = os.path.join(tmp, "bus.sock")
        conf = os.path.join(tmp, "bus.conf")
        with open(conf, "w") as f:
            f.write(BUS_CONF.format(sock=sock, policy=os.path.abspath(policy)))
        r, w = os.pipe()
        bus = subprocess.Popen(["dbus-daemon", "--config-file=" + conf, "--nofork", "--print-address=%d" % w],
                               pass_fds=(w,), stderr=open(os.path.join(tmp, "bus.log"), "w"))
        procs.append(bus)
        os.close(w)
        address = os.fdopen(r).readline().strip()
        bus_log = os.path.join(tmp, "bus.log")
        if not t.ok(address.startswith("unix:"), "a private dbus-daemon starts", open(bus_log).read()):
            return t.done()
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)
        env.pop("NOTIFY_SOCKET", None)
        log = open(os.path.join(tmp, "edfd.log"), "w")
        daemon = subprocess.Popen([edfd, "--embedded-config", "--state-dir", os.path.join(tmp, "state"),
                                   "--cgroup-root", os.path.join(tmp, "no-cgroup")], env=env, stderr=log,
                                  stdout=subprocess.DEVNULL)
        procs.append(daemon)

        def busctl(*args):
            return subprocess.run(["busctl", "--address=" + address] + list(args), capture_output=True,
                                  text=True)

        def ready():
            if daemon.poll() is not None:
                return True
            return busctl("call", "org.edfd.Admission1", "/org/edfd/Admission1",
                          "org.edfd.Admission1.Manager",
                          "Echo", "t", "1").returncode == 0

        wait_for(ready, 20)
        if daemon.poll() is not None:
            log.flush()
            edfd_log = open(log.name).read()
            if "Cannot read the kernel" in edfd_log:
                skip_all("edfd cannot read the kernel's deadline capacity here")
            t.ok(False, "edfd starts on the private bus", edfd_log)
            return t.done()
        t.ok(True, "edfd starts on the private bus")

        live = busctl("introspect", "--xml-interface", "org.edfd.Admission1", "/org/edfd/Admission1")
        if not t.ok(live.returncode == 0, "busctl introspects /org/edfd/Admission1", live.stderr):
            return t.done()
        live_iface = xml_interface(ET.fromstring(live.stdout))
        doc_iface = xml_interface(ET.parse(xml).getroot())
        if not t.ok(live_iface is not None and doc_iface is not None,
                    "both the daemon and docs/org.edfd.Admission1.xml describe org.edfd.Admission1.Manager"):
            return t.done()
        a, b = describe(live_iface), describe(doc_iface)
        for kind in ("method", "property", "signal"):
            for name in sorted(set(a[kind]) | set(b[kind])):
                t.ok(a[kind].get(name) == b[kind].get(name),
                     f"{kind} {name}: docs/org.edfd.Admission1.xml matches the daemon",
                     f"daemon: {a[kind].get(name)}", f"docs:   {b[kind].get(name)}")
        # The member order of the document follows the daemon's (and so the vtable's).
        order = lambda iface: [(el.tag, el.get("name")) for el in iface if el.tag in ("method", "property",
                                                                                      "signal")]
        t.ok(order(live_iface) == order(doc_iface),
             "docs/org.edfd.Admission1.xml lists the members in the daemon's order",
             f"daemon: {order(live_iface)}", f"docs:   {order(doc_iface)}")

        # The sd-bus example of the man page, run against this daemon.
        if not shutil.which("scdoc") or not shutil.which("man") or not shutil.which("pkg-config"):
            t.skip("the man page's sd-bus example admits and releases itself",
                   "needs scdoc, man and pkg-config")
        else:
            exe, why = build_example(mandir, tmp)
            if not exe:
                t.ok(False, "the man page's sd-bus example builds", why)
            else:
                # As an unprivileged user, through the shipped bus policy: what the example is for.
                def drop():
                    os.setgroups([])
                    os.setgid(65534)
                    os.setuid(65534)

                name = "the man page's sd-bus example, run as uid 65534, admits and releases itself"
                run = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=60,
                                     preexec_fn=drop)
                over = busctl("get-property", "org.edfd.Admission1", "/org/edfd/Admission1",
                              "org.edfd.Admission1.Manager", "Overcommitted").stdout.strip() == "b true"
                if run.returncode != 0 and "KernelRefused" in run.stderr:
                    t.skip(name, "the kernel refused: " + run.stderr.strip())
                elif run.returncode != 0 and over:
                    t.skip(name, "deadline threads outside edfd hold more than this machine's capacity")
                else:
                    t.ok(run.returncode == 0 and re.fullmatch(r"reservation \d+\n", run.stdout) is not None,
                         name,
                         f"exit {run.returncode}", "stdout: " + run.stdout, "stderr: " + run.stderr)
                    left = busctl("call", "org.edfd.Admission1", "/org/edfd/Admission1",
                                  "org.edfd.Admission1.Manager",
                                  "ListReservations")
                    listed = b["method"]["ListReservations"][0][1]
                    t.ok(left.stdout.strip() == listed + " 0", "nothing is left admitted after it",
                         left.stdout, f"expected: {listed} 0")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


def main(argv):
    modes = {
        "man-pages": (check_man_pages, 1),
        "edfd": (check_edfd, 2),
        "edfctl": (check_edfctl, 2),
        "config": (check_config, 3),
        "dbus": (check_dbus, 4),
        "example": (check_example, 2),
        "live": (check_live, 4),
        "library": (check_library, 4),
    }
    if len(argv) < 2 or argv[1] not in modes or len(argv) - 2 != modes[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        return modes[argv[1]][0](*argv[2:])
    except Exception as e:  # a broken check must fail loudly, not pass
        import traceback
        for line in traceback.format_exc().splitlines():
            print("# " + line)
        print("Bail out! " + str(e).replace("\n", " "))
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
