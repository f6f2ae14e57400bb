#!/usr/bin/env python3
"""manexamples.py: the man pages' literal displays as a user sees them.

  manexamples.py render PAGE...   every .Bd -literal display of each page,
                                  rendered by mandoc, must read as its
                                  source means it (no garbled escapes)
  manexamples.py run PAGE         run the EXAMPLES of PAGE as pasted

render: each page is rendered with `mandoc -Tascii | col -bx`, with a
marker before each display so that its lines can be found; each rendered
line must equal its source line with the mdoc escapes a display uses
decoded (\\e, \\-, \\&, \\(aq ...). Any other backslash in the source must
come out as written: a '\\t' meant for printf has to be written '\\et'.

run: the rendered EXAMPLES, not the source, are what a user pastes. Each
display is a transcript: "$ COMMAND" (continued on the next lines after a
trailing '\\', '|', '||' or '&&'), then the lines it prints. The commands
run, in order, in one bash per page (so `kill %1`, `wait` and a file made
by an earlier display work as they would in a terminal), in the current
directory, with standard input from /dev/null. Fixed ports (20000,
7001, ...) are replaced by held ones everywhere in the page, output
included. A foreground command must exit 0 and print what the page shows,
compared line by line after NORMALIZE (white space, times, ages and
ephemeral ports vary from run to run); background commands (`... &`) are
not compared. Waiting is bounded, never a fixed sleep:
  - a command that only reads (cat, gdinspect ...) is run again until its
    output matches, for up to RETRY seconds: acknowledgements arrive after
    the command that sent them has returned;
  - "sleep N" in an example, the user's pause, is dropped: the read-only
    command after it is retried as above, or NOTES gives a condition;
  - before each display the background jobs of the previous ones must have
    ended (within RETRY seconds), unless NOTES says it continues them.
NOTES, below, lists per page what cannot run as shown and why (printed as
"skip: ..."), and the few commands that need a condition or a looser
comparison. A display of config lines ("# NAME.ini" first) is written to
NAME.ini and must load: gdinspect -c NAME.ini must not exit 78.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time

RETRY = 30          # seconds a read-only command is retried, jobs awaited
STEP_TIMEOUT = 90   # seconds any one command may take

# Per page: (substring of a command, note). Notes:
#   ("skip", WHY)            do not run it; print WHY
#   ("before", SHELL-COND)   wait until COND holds, then run it once
#   ("sleep-until", COND)    for a "sleep N" step: wait until COND instead
#   ("unordered", None)      compare its output lines in any order (header
#                            line first)
#   ("same-as", SUBSTRING)   expect the output the page shows for the
#                            command containing SUBSTRING, ports unchanged
#   ("continues", None)      the display holding this command continues the
#                            previous one (its jobs stay up)
NOTES = {
    "gdack.1": [],
    "gdinspect.1": [
        # the key must have reached the gdsub first; a user typing the
        # commands one by one gives it the time
        ("gdack -c a.ini 127.0.0.1:20000/2", ("before", "grep -q /2 a.txt")),
        # two subscribers connect at the same time: either row may be first
        ("gdinspect -c pub.ini subs", ("unordered", None)),
        ("d=${XDG_RUNTIME_DIR", ("continues", None)),
    ],
    "gdkit-stream.5": [
        ("| gdpub -p 7001 -o - | hexdump -C",
         ("skip", "time, epoch and CRC32C differ from run to run, as the page "
          "says; decode.bats checks these bytes, written by mkstream.py, and "
          "the next example compares mkstream.py's dump with this one")),
        ("tests/cli/mkstream.py", ("same-as", "| gdpub -p 7001 -o - | hexdump -C")),
        ("ssh subhost", ("skip", "needs ssh to another host; the same pipeline "
                         "with sh -c in place of ssh runs above")),
    ],
    "gdkit.7": [],
    "gdkit.conf.5": [],
    "gdpub.1": [
        ("seq 1 5 | gdpub -p 20000 -n 1 --wait-ready=30", ("continues", None)),
        ("--watch 1 pending",
         ("skip", "runs until interrupted, and needs the gdpub the text "
          "speaks of; gdinspect(1)'s examples run gdinspect pending")),
        ("ssh subhost", ("skip", "needs ssh to another host; the same pipeline "
                         "with sh -c in place of ssh runs above")),
        # the stream file is read once the publisher has written it
        ("sleep 1", ("sleep-until",
                     "[ \"$(gdinspect decode blocks.gds 2>/dev/null | grep -c /)\" -ge 3 ]")),
    ],
    "gdsub.1": [],
}

READONLY = {"cat", "cut", "gdinspect", "grep", "head", "sort", "wc", "tail",
            "sed", "hexdump", "socat"}

ESCAPES = [("\\e", "\\"), ("\\-", "-"), ("\\&", ""), ("\\(aq", "'"),
           ("\\(dq", '"'), ("\\(ti", "~"), ("\\(ha", "^"), ("\\(ga", "`"),
           ("\\(rs", "\\"), ("\\ ", " ")]


def intended(src):
    """A display's source line as its author means it: the escapes above
    decoded, any other backslash kept as it is."""
    out, i = [], 0
    while i < len(src):
        if src[i] == "\\":
            for esc, rep in ESCAPES:
                if src.startswith(esc, i):
                    out.append(rep)
                    i += len(esc)
                    break
            else:
                out.append(src[i])
                i += 1
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


def displays(path):
    """[(section, first source line number, [source lines])] of the page's
    .Bd -literal displays."""
    res, section, cur = [], "", None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f.read().split("\n"), 1):
            if cur is not None:
                if line.startswith(".Ed"):
                    res.append((section, cur[0], cur[1]))
                    cur = None
                else:
                    cur[1].append(line)
            elif line.startswith(".Sh "):
                section = line[4:].strip()
            elif line.startswith(".Bd -literal"):
                cur = (n + 1, [])
    return res


def render(path):
    """The rendered lines of each display, in order, and the marked source."""
    src = open(path, encoding="utf-8").read().split("\n")
    out, k = [], 0
    for line in src:
        if line.startswith(".Bd -literal"):
            out += [".Pp", "GDKITMARK%d" % k]
            k += 1
        out.append(line)
    r = subprocess.run(["mandoc", "-Tascii"], input="\n".join(out),
                       capture_output=True, text=True, check=True)
    text = subprocess.run(["col", "-bx"], input=r.stdout, capture_output=True,
                          text=True, check=True).stdout.split("\n")
    res = []
    disp = displays(path)
    for k, (_, _, lines) in enumerate(disp):
        i = text.index(next(t for t in text if t.strip() == "GDKITMARK%d" % k))
        i += 1
        while i < len(text) and text[i].strip() == "":
            i += 1
        block = text[i:i + len(lines)]
        ind = min((len(b) - len(b.lstrip(" ")) for b in block if b.strip()),
                  default=0)
        res.append([b[ind:].rstrip() for b in block])
    return disp, res


def squash(s):
    return " ".join(s.split())


def cmd_render(pages):
    bad = 0
    for page in pages:
        disp, rendered = render(page)
        for (section, first, lines), got in zip(disp, rendered):
            for j, src in enumerate(lines):
                if src.startswith("."):
                    print("%s:%d: a macro inside a display: %s" %
                          (page, first + j, src))
                    bad += 1
                    continue
                want = intended(src)
                have = got[j] if j < len(got) else "(missing)"
                if squash(want) != squash(have):
                    print("%s:%d (%s): renders as\n    %s\nnot as written:\n    %s"
                          % (os.path.basename(page), first + j, section, have,
                             want))
                    bad += 1
    return 1 if bad else 0


# ---- running ----

def held_ports(n):
    """n ports of 127.0.0.1 chosen by the kernel, and the sockets that keep
    them bound without listening while the caller holds them: a port closed
    before its listener binds it could be taken in between; bound with
    SO_REUSEADDR, a listener that sets it too (gdpub, socat's reuseaddr)
    binds it and listens (see hold_port in helpers.bash)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    return socks, ports


class Step:
    def __init__(self, cmd, expect):
        self.cmd, self.expect, self.raw_expect = cmd, expect, list(expect)
        self.orig = cmd     # as the page shows it, for NOTES


def transcript(lines):
    """[Step] of a rendered display; [] if it holds no command."""
    steps, cur = [], None
    cont = False
    for line in lines:
        if cont:
            cur.cmd += "\n" + line
        elif line.startswith("$ "):
            cur = Step(line[2:], [])
            steps.append(cur)
        elif cur is not None:
            cur.expect.append(line)
            continue
        else:
            return []
        cont = bool(re.search(r"(\\|\||&&)\s*$", cur.cmd))
    for s in steps:
        s.raw_expect, s.orig = list(s.expect), s.cmd
    return steps


def normalize(lines, ports):
    known = {str(p) for p in ports}

    def eph(m):
        return m.group(0) if m.group(1) in known else "127.0.0.1:<EPH>"
    out = []
    for l in lines:
        l = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<TIME>", l)
        l = re.sub(r'"(time_ns|epoch)":\d+', r'"\1":<N>', l)
        l = re.sub(r"\b[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \w+ \d{4}\b",
                   "<DATE>", l)
        l = re.sub(r"(?<![\d.])\d+\.\d{3}(?![\d.])", "<F3>", l)
        # gdpub's summary of a run: its wall time
        l = re.sub(r"blocks in \d+\.\d s:", "blocks in <S> s:", l)
        l = re.sub(r"127\.0\.0\.1:(\d+)", eph, l)
        l = squash(l)
        out.append(l)
    while out and out[-1] == "":
        out.pop()
    return out


def readonly(cmd):
    if re.search(r"(^|[^2])>", cmd) or "&" in cmd.replace("2>&1", ""):
        return False
    words = []
    for part in re.split(r"\|\|?|;|&&", cmd):
        w = part.split()
        if w:
            words.append(w[0])
    return bool(words) and all(w in READONLY for w in words)


class Shell:
    def __init__(self, work, log):
        self.work, self.n = work, 0
        os.makedirs(os.path.join(work, ".ex"), exist_ok=True)
        self.log = open(log, "w")
        self.p = subprocess.Popen(["bash"], stdin=subprocess.PIPE,
                                  stdout=self.log, stderr=subprocess.STDOUT,
                                  cwd=work, start_new_session=True, text=True)

    def run(self, cmd, timeout=STEP_TIMEOUT):
        """(status, output) of cmd, or (None, output so far) on timeout"""
        self.n += 1
        d = os.path.join(self.work, ".ex")
        c, o, r = ("%s/%s%d" % (d, x, self.n) for x in ("cmd", "out", "rc"))
        with open(c, "w") as f:
            f.write(cmd)
        self.p.stdin.write('eval "$(cat %s)" < /dev/null > %s 2>&1; '
                           'echo $? > %s.t; mv %s.t %s\n' % (c, o, r, r, r))
        self.p.stdin.flush()
        end = time.monotonic() + timeout
        while not os.path.exists(r):
            if time.monotonic() > end or self.p.poll() is not None:
                return None, open(o).read() if os.path.exists(o) else ""
            time.sleep(0.02)
        return int(open(r).read()), open(o).read()

    def jobs_done(self, timeout=RETRY):
        end = time.monotonic() + timeout
        while True:
            rc, out = self.run("jobs -r")
            if rc == 0 and out.strip() == "":
                # as a terminal's prompt does, report the ended jobs, so
                # the next one is %1 again
                self.run("wait; jobs")
                return ""
            if time.monotonic() > end:
                return out
            time.sleep(0.1)

    def close(self):
        try:
            os.killpg(self.p.pid, 9)
        except ProcessLookupError:
            pass
        self.p.wait()
        self.log.close()


def note(notes, cmd, kind):
    for sub, (k, arg) in notes:
        if k == kind and sub in cmd:
            return arg if arg is not None else True
    return None


def cmd_run(page):
    name = os.path.basename(page)
    notes = NOTES.get(name)
    if notes is None:
        print("%s: no NOTES entry: add one (even empty) in %s" % (name, __file__))
        return 1
    disp, rendered = render(page)
    ex = [(first, r) for (sec, first, _), r in zip(disp, rendered)
          if sec == "EXAMPLES"]
    if not ex:
        print("%s: no EXAMPLES displays" % name)
        return 1
    all_steps = [transcript(r) for _, r in ex]
    text = "\n".join(s.cmd for st in all_steps for s in st)
    fixed = sorted(set(re.findall(
        r"(?:-p |port=|:|TCP-LISTEN:|pub-)(\d{4,5})\b", text)))
    held, ports = held_ports(len(fixed))   # held until this returns
    pmap = dict(zip(fixed, (str(p) for p in ports)))

    def subst(s):
        for a, b in pmap.items():
            s = re.sub(r"(?<!\d)%s(?!\d)" % a, b, s)
        return s
    raw = {}
    for st in all_steps:
        for s in st:
            raw[s.orig] = s.raw_expect
            s.cmd = subst(s.cmd)
            s.expect = [subst(e) for e in s.expect]
    if not os.path.exists("tests") and os.path.isdir(os.path.join(TOP, "tests")):
        os.symlink(os.path.join(TOP, "tests"), "tests")   # mkstream.py
    sh = Shell(os.getcwd(), ".ex-shell.log")
    fails = 0
    try:
        for (first, r), steps in zip(ex, all_steps):
            where = "%s:%d" % (name, first)
            if not steps:
                m = re.match(r"#\s*(\S+\.ini)\s*$", r[0] if r else "")
                if not m:
                    print("%s: a display with no command and no '# NAME.ini': "
                          "nothing to check" % where)
                    fails += 1
                    continue
                with open(m.group(1), "w") as f:
                    f.write(subst("\n".join(r)) + "\n")
                rc, out = sh.run("gdinspect -c %s stats" % m.group(1))
                ok = rc != 78 and m.group(1) + ":" not in out
                print("%s: %s %s" % (where, m.group(1),
                                     "loads" if ok else "does not load: " + out))
                fails += not ok
                continue
            if not any(note(notes, s.orig, "continues") for s in steps):
                left = sh.jobs_done()
                if left:
                    print("%s: the jobs of the examples before it still run "
                          "after %d s:\n%s" % (where, RETRY, left))
                    fails += 1
                    return 1
            retry_next = False
            for s in steps:
                why = note(notes, s.orig, "skip")
                if why:
                    first = s.orig.split("\n")[0].rstrip(" \\")
                    print("%s: skip: $ %s%s (%s)" % (where, first,
                          " ..." if "\n" in s.orig else "", why))
                    continue
                m = re.match(r"sleep [\d.]+(;\s*(.*))?$", s.cmd, re.S)
                if m:
                    cond = note(notes, s.orig, "sleep-until")
                    if cond:
                        if not wait_cond(sh, subst(cond)):
                            print("%s: $ %s: not true after %d s: %s"
                                  % (where, s.cmd, RETRY, cond))
                            fails += 1
                            break
                        continue
                    if not m.group(2):
                        retry_next = True
                        continue
                    s.cmd = m.group(2)
                    retry_next = True
                cond = note(notes, s.orig, "before")
                if cond and not wait_cond(sh, subst(cond)):
                    print("%s: $ %s: not true after %d s: %s"
                          % (where, s.cmd, RETRY, cond))
                    fails += 1
                    break
                same = note(notes, s.orig, "same-as")
                if same:
                    s.expect = next(v for k, v in raw.items() if same in k)
                bg = s.cmd.rstrip().endswith("&") and not s.cmd.rstrip().endswith("&&")
                if retry_next and not readonly(s.cmd):
                    print("%s: $ %s: follows a sleep but is not read-only: "
                          "give NOTES a sleep-until" % (where, s.cmd))
                    fails += 1
                    break
                retry_next = False
                ok, rc, out = check(sh, s, ports, bg, notes)
                if not ok:
                    print("%s: $ %s\n  exit status %s; expected:\n%s\n  got:\n%s"
                          % (where, s.cmd, rc, indent(s.expect), indent(out.split("\n"))))
                    fails += 1
                    break
                print("%s: ok: $ %s" % (where, s.cmd.split("\n")[0]))
        left = sh.jobs_done()
        if left:
            print("%s: jobs still running after the last example:\n%s" % (name, left))
            fails += 1
    finally:
        sh.close()
    return 1 if fails else 0


def indent(lines):
    return "\n".join("    " + l for l in lines)


def wait_cond(sh, cond):
    end = time.monotonic() + RETRY
    while time.monotonic() < end:
        rc, _ = sh.run(cond)
        if rc == 0:
            return True
        time.sleep(0.05)
    return False


def check(sh, s, ports, bg, notes):
    """(ok, status, output) of one step, retried when it only reads"""
    want = normalize(s.expect, ports)
    unordered = note(notes, s.orig, "unordered")
    end = time.monotonic() + RETRY
    while True:
        rc, out = sh.run(s.cmd)
        if bg:
            return rc == 0, rc, out
        got = normalize(out.split("\n"), ports)
        if unordered:
            same = got[:1] == want[:1] and sorted(got[1:]) == sorted(want[1:])
        else:
            same = got == want
        if rc == 0 and same:
            return True, rc, out
        if rc is None or not readonly(s.cmd) or time.monotonic() > end:
            return False, rc, out
        time.sleep(0.1)


TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__":
    # a timeout's SIGTERM still runs Shell.close(): no example left running
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("manexamples.py: terminated"))
    if len(sys.argv) >= 3 and sys.argv[1] == "render":
        sys.exit(cmd_render(sys.argv[2:]))
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        sys.exit(cmd_run(sys.argv[2]))
    sys.exit(__doc__)
