#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""edfd-trace's analysis on synthetic traces (TAP): no root, no tracefs. Each case is a trace as
tracefs prints it, fed to the same Analysis the tool runs on a real recording, and the cause each
job is sorted into. The real recording is tested by tests/integration/test-trace.sh; this pins the
corner cases a real recording hits only by chance (a thread throttled before its CPU's first
switch was once taken for a stall on every later job)."""
import importlib.machinery
import importlib.util
import sys

path = sys.argv[1]
loader = importlib.machinery.SourceFileLoader("edfd_trace", path)
spec = importlib.util.spec_from_loader("edfd_trace", loader)
tr = importlib.util.module_from_spec(spec)
loader.exec_module(tr)

MS = 1000000
n = 0
failed = 0


def ok(cond, name, detail=""):
    global n, failed
    n += 1
    if cond:
        print(f"ok {n} - {name}")
    else:
        failed += 1
        print(f"not ok {n} - {name}")
        for line in str(detail).splitlines():
            print(f"#   {line}")


class T:
    """What Analysis needs of a traced thread."""

    def __init__(self, tid, runtime, deadline, period):
        self.pid = self.tid = tid
        self.comm = "periodic"
        self.runtime, self.deadline, self.period = runtime, deadline, period


def ts(ns):
    return f"{ns // 1000000000}.{ns % 1000000000 // 1000:06d}"


def line(comm, pid, cpu, ns, ev, body):
    return f"{comm:>16}-{pid:<7} [{cpu:03d}] d..2. {ts(ns)}: {ev}: {body}"


def switch(cpu, ns, prev, pprio, state, nxt, nprio, ctx=None):
    pc, pp = prev
    nc, np = nxt
    return line(pc, pp, cpu, ns, "sched_switch",
                f"prev_comm={pc} prev_pid={pp} prev_prio={pprio} prev_state={state} ==> "
                f"next_comm={nc} next_pid={np} next_prio={nprio}")


def wakeup(cpu, ns, who, target, ctx=("swapper/0", 0)):
    c, p = who
    return line(ctx[0], ctx[1], cpu, ns, "sched_wakeup", f"comm={c} pid={p} prio=-1 target_cpu={target:03d}")


TIMER = "ffff8880deadbeef"


def timer_start(cpu, ns, ctx, expires, addr=TIMER):
    return line(ctx[0], ctx[1], cpu, ns, "hrtimer_start",
                f"hrtimer={addr} function=dl_task_timer expires={expires} softexpires={expires} mode=ABS|HARD")


def timer_expire(cpu, ns, addr=TIMER):
    return line("<idle>", 0, cpu, ns, "hrtimer_expire_entry", f"hrtimer={addr} function=dl_task_timer now={ns}")


def analyse(threads, lines, ncpu=2):
    an = tr.Analysis(threads, ncpu)
    an.feed(("\n".join(lines) + "\n").encode())
    an.finish()
    return an


P = ("periodic", 100)
IDLE = ("swapper/0", 0)
HOG = ("hog", 200)
BASE = 1000 * MS


def overrun_jobs(first_switch_seen):
    """A 2 ms / 10 ms thread doing 3 ms of work: it is throttled at 2 ms in each period and
    replenished at the next period's start. With first_switch_seen False the recording starts while
    the thread runs, so its first throttle comes before any switch on its CPU."""
    L = []
    t0 = BASE
    if first_switch_seen:
        L.append(wakeup(0, t0, P, 0))
        L.append(switch(0, t0, IDLE, 120, "R", P, -1))
    # job 1 (partial when the recording began inside it): throttled at +2 ms, replenished at +10
    L.append(timer_start(0, t0 + 2 * MS, P, t0 + 10 * MS))
    L.append(switch(0, t0 + 2 * MS, P, -1, "R", IDLE, 120))
    L.append(timer_expire(0, t0 + 10 * MS))
    L.append(switch(0, t0 + 10 * MS, IDLE, 120, "R", P, -1))
    L.append(switch(0, t0 + 11 * MS, P, -1, "S", IDLE, 120))
    for k in range(2, 5):  # jobs 2..4: each released at 20, 40, 60 ms
        r = t0 + 20 * (k - 1) * MS
        L.append(wakeup(0, r, P, 0))
        L.append(switch(0, r, IDLE, 120, "R", P, -1))
        L.append(timer_start(0, r + 2 * MS, P, r + 10 * MS))
        L.append(switch(0, r + 2 * MS, P, -1, "R", IDLE, 120))
        L.append(timer_expire(0, r + 10 * MS))
        L.append(switch(0, r + 10 * MS, IDLE, 120, "R", P, -1))
        L.append(switch(0, r + 11 * MS, P, -1, "S", IDLE, 120))
    return L


for seen in (True, False):
    what = "after a switch was seen" if seen else "before its CPU's first switch"
    th = T(100, 2 * MS, 10 * MS, 10 * MS)
    an = analyse([th], overrun_jobs(seen))
    jobs = an.tasks[100].jobs
    later = [j for j in jobs if j.kind == "wakeup" and j.release >= BASE + 20 * MS]
    ok(len(later) == 3, f"throttled {what}: the three woken jobs are seen", [(j.n, j.kind) for j in jobs])
    causes = [tr.classify(an.tasks[100], j) for j in later]
    ok(causes == ["throttled"] * 3, f"throttled {what}: every later job's cause is throttled", causes)
    ok(all(j.throttles == 1 and j.throttle_wait == 8 * MS for j in later),
       f"throttled {what}: one throttle of 8 ms in each job",
       [(j.throttles, j.throttle_wait) for j in later])
    ok(all(j.finish - j.release == 11 * MS and j.finish > j.deadline for j in later),
       f"throttled {what}: response 11 ms, late", [(j.release, j.finish, j.deadline) for j in later])

# A fair server's timer (same function, expiring up to a second later, started by whatever runs)
# is not the thread's: the thread preempted by an earlier deadline is not throttled.
th = T(100, 2 * MS, 10 * MS, 10 * MS)
Q = ("other", 300)
L = [wakeup(0, BASE, P, 0),
     switch(0, BASE, IDLE, 120, "R", P, -1),
     timer_start(0, BASE + 1 * MS, P, BASE + 900 * MS, addr="ffff88800000f00d"),
     switch(0, BASE + 1 * MS, P, -1, "R", Q, -1),
     switch(0, BASE + 6 * MS, Q, -1, "S", P, -1),
     switch(0, BASE + 7 * MS, P, -1, "S", IDLE, 120)]
an = analyse([th], L)
jobs = an.tasks[100].jobs
ok(len(jobs) == 1 and jobs[0].throttles == 0, "a fair server's timer started in the thread's context is not its throttle",
   [(j.n, j.throttles) for j in jobs])
ok(len(jobs) == 1 and tr.classify(an.tasks[100], jobs[0]) == "earlier-deadline",
   "preempted by another deadline thread: cause earlier-deadline",
   [tr.classify(an.tasks[100], j) for j in jobs])

# Runnable while a fair task runs: nothing the scheduler would do for a deadline thread, a stall.
L = [wakeup(0, BASE, P, 0),
     switch(0, BASE, IDLE, 120, "R", HOG, 120),
     switch(0, BASE + 3 * MS, HOG, 120, "R", P, -1),
     switch(0, BASE + 4 * MS, P, -1, "S", HOG, 120)]
an = analyse([T(100, 2 * MS, 10 * MS, 10 * MS)], L)
jobs = an.tasks[100].jobs
ok(len(jobs) == 1 and tr.classify(an.tasks[100], jobs[0]) == "stall" and jobs[0].wait.get("fair") == 3 * MS,
   "runnable behind a fair task for 3 ms: cause stall, 3 ms of fair wait",
   [(tr.classify(an.tasks[100], j), j.wait) for j in jobs])

# A thread that ends each job with sched_yield() (edfd_job_done()): the syscall's entry prints as
# "sys_sched_yield()", not "event: fields"; the yield arms the replenishment timer and switches the
# thread out still runnable; the next job starts at the replenishment. Once every job was missed
# (JOBS 0): the line did not parse.
def yield_line(cpu, ns):
    return f"{P[0]:>16}-{P[1]:<7} [{cpu:03d}] ..... {ts(ns)}: sys_sched_yield()"


L = [switch(0, BASE - 5 * MS, P, -1, "S", IDLE, 120),  # asleep before its first job: that job is whole
     wakeup(0, BASE, P, 0), switch(0, BASE, IDLE, 120, "R", P, -1)]
for k in range(4):
    r = BASE + 10 * k * MS
    if k > 0:
        L.append(timer_expire(0, r))
        L.append(switch(0, r + 10000, IDLE, 120, "R", P, -1))
    L.append(yield_line(0, r + 300000))
    L.append(timer_start(0, r + 300000, P, r + 10 * MS))
    L.append(switch(0, r + 300000, P, -1, "R", IDLE, 120))
an = analyse([T(100, 1 * MS, 10 * MS, 10 * MS)], L)
jobs = an.tasks[100].jobs
done = [j for j in jobs if j.finish is not None and j.complete]
ok(len(done) == 4 and [j.end_kind for j in done] == ["yield"] * 4,
   "jobs ended by sched_yield(): four jobs, each ended by its yield",
   [(j.n, j.kind, j.end_kind, j.complete) for j in jobs])
ok(all(j.throttles == 0 for j in done) and [tr.classify(an.tasks[100], j) for j in done].count("throttled") == 0,
   "a yield is not a throttle", [(j.throttles, tr.classify(an.tasks[100], j)) for j in done])

# A constrained-deadline thread (D < T: a split's stage 1 is (C1, C1, T)) woken after its deadline
# but before the kernel's next period is throttled until that period begins: the kernel starts its
# dl_timer in the waker's context (dl_check_constrained_dl()) just before the wakeup, and the
# expiry lets it run. Once each such job was taken for an overrun ("started with 0ns ... overran")
# or a stall; it is its own cause, "period", and no throttle.
US = 1000
L = [switch(0, BASE - 5 * MS, P, -1, "S", IDLE, 120)]
for k in range(3):
    r = BASE + 10 * k * MS
    L.append(timer_start(0, r, IDLE, r + 80 * US))
    L.append(wakeup(0, r + 2 * US, P, 0))
    L.append(timer_expire(0, r + 80 * US))
    L.append(switch(0, r + 85 * US, IDLE, 120, "R", P, -1))
    L.append(switch(0, r + 85 * US + 2950 * US, P, -1, "S", IDLE, 120))
th = T(100, 3 * MS, 3 * MS, 10 * MS)
an = analyse([th], L)
jobs = [j for j in an.tasks[100].jobs if j.finish is not None and j.complete]
ok(len(jobs) == 3, "constrained deadline woken before its period: three jobs", [(j.n, j.kind) for j in jobs])
ok(all(j.period_wait == 78 * US for j in jobs), "each waited 78 us for its period (wakeup to the timer's expiry)",
   [j.period_wait for j in jobs])
ok(all(j.throttles == 0 and not j.started_throttled and not j.throttled_at_end for j in jobs),
   "waiting for the period is not a throttle", [(j.throttles, j.started_throttled, j.throttled_at_end) for j in jobs])
ok(all(j.finish > j.deadline for j in jobs) and [tr.classify(an.tasks[100], j) for j in jobs] == ["period"] * 3,
   "late by the wait: cause period", [tr.classify(an.tasks[100], j) for j in jobs])
# The same timer pattern for an implicit-deadline thread is not a period wait (the kernel never
# throttles it at a wakeup): the timer is somebody else's.
an = analyse([T(100, 3 * MS, 10 * MS, 10 * MS)], L)
jobs = [j for j in an.tasks[100].jobs if j.finish is not None and j.complete]
ok(len(jobs) == 3 and all(j.period_wait == 0 for j in jobs), "implicit deadline: no period wait",
   [j.period_wait for j in jobs])

print(f"1..{n}")
sys.exit(1 if failed else 0)
