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

# A job that sleeps in a futex wait in its middle (a default mutex the fair holder has) is one job,
# not two; its cause is the lock, named with the holder (who woke it: sched_waking runs in the
# waker's context), the holder's policy, how long it ran in the wait and what preempted it.
H = ("holder", 101)


def futex_enter(cpu, ns, who, op):
    return (f"{who[0]:>16}-{who[1]:<7} [{cpu:03d}] ..... {ts(ns)}: sys_futex(uaddr: 0x7f0000001000, "
            f"op: {op:#x}, val: 0x2, utime: 0x0, uaddr2: 0x0, val3: 0x0)")


def futex_exit(cpu, ns, who):
    return f"{who[0]:>16}-{who[1]:<7} [{cpu:03d}] ..... {ts(ns)}: sys_futex -> 0x0"


def waking(cpu, ns, who, target, ctx):
    return line(ctx[0], ctx[1], cpu, ns, "sched_waking", f"comm={who[0]} pid={who[1]} prio=-1 target_cpu={target:03d}")


def lock_job(op, holder_prio):
    US = 1000
    return [
        switch(0, BASE - 5 * MS, H, 120, "S", IDLE, 120),  # the holder seen with its own priority
        switch(0, BASE - 4 * MS, P, -1, "S", IDLE, 120),
        wakeup(0, BASE, P, 0), switch(0, BASE, IDLE, 120, "R", P, -1),
        futex_enter(0, BASE + 100 * US, P, 0x81), futex_exit(0, BASE + 102 * US, P),  # a wake: no sleep
        futex_enter(0, BASE + 500 * US, P, op),
        switch(0, BASE + 500 * US, P, -1, "S", H, holder_prio),
        switch(0, BASE + 1 * MS, H, holder_prio, "R", HOG, 120),
        switch(0, BASE + 5 * MS, HOG, 120, "R", H, holder_prio),
        waking(0, BASE + 6 * MS, P, 0, H), wakeup(0, BASE + 6 * MS, P, 0, ctx=H),
        switch(0, BASE + 6 * MS, H, holder_prio, "R", P, -1),
        futex_exit(0, BASE + 6 * MS + 10 * US, P),
        switch(0, BASE + 7500 * US, P, -1, "S", HOG, 120),  # the job's end: not in a futex
    ]


for op, pi in ((0x80, False), (0x86, True)):
    kind = "PI" if pi else "default"
    th = T(100, 3 * MS, 5 * MS, 10 * MS)
    th.source, th.reservation = "tid", None  # what summarize() reports of it
    an = tr.Analysis([th], 2, tgid_of=lambda tid: 100)
    an.feed(("\n".join(lock_job(op, -1 if pi else 120)) + "\n").encode())
    an.finish()
    jobs = [j for j in an.tasks[100].jobs if j.finish is not None and j.complete]
    ok(len(jobs) == 1 and jobs[0].finish - jobs[0].release == 7500 * 1000,
       f"{kind} mutex: a sleep in a futex wait does not end the job (one job, response 7.5 ms)",
       [(j.n, j.release, j.finish, j.end_kind) for j in an.tasks[100].jobs])
    j = jobs[0] if jobs else tr.Job(0, 0, 0, "none")
    ok(len(j.blocks) == 1 and j.lock_wait == 5500 * 1000 and tr.classify(an.tasks[100], j) == "lock",
       f"{kind} mutex: one lock wait of 5.5 ms, cause lock", [(b.start, b.end) for b in j.blocks])
    b = j.blocks[0] if j.blocks else tr.LockWait(0, False, 0)
    ok(b.waker == (101, "holder") and b.holder_pid == 100 and b.holder_policy == "SCHED_OTHER" and b.pi == pi,
       f"{kind} mutex: the holder is the waker, process 100, SCHED_OTHER", (b.waker, b.holder_pid, b.holder_policy, b.pi))
    ok(b.holder_ran == 1500 * 1000 and b.preempted_by == {("fair", 200, "hog"): 4 * MS} and b.holder_slept == 0,
       f"{kind} mutex: the holder ran 1.5 ms in the wait, the hog preempted it for 4 ms",
       (b.holder_ran, b.preempted_by, b.holder_slept))
    ok(b.holder_boosted == (1500 * 1000 if pi else 0),
       f"{kind} mutex: the holder ran with the waiter's deadline {'all the time' if pi else 'never'}", b.holder_boosted)
    rep = tr.summarize(an, [th], {}, {"start": BASE - 10 * MS, "stop": BASE + 20 * MS,
                       "interrupted": False, "steal_ns": {}, "deadline_tracepoints": []}, type("A", (), {"all_jobs": False})())
    t = rep["threads"][0]
    text = tr.job_line(t, t["late_or_throttled_jobs"][0], 4 * MS) if t["late_or_throttled_jobs"] else ""
    want = ("waited 5.50ms for a PI lock held by 100/101 (holder, SCHED_OTHER): it ran 1.50ms of that, 1.50ms with "
            "the waiter's deadline (inherited), preempted by hog/200 fair 4.00ms;" if pi else
            "waited 5.50ms for a lock held by 100/101 (holder, SCHED_OTHER): it ran 1.50ms of that, preempted by "
            "hog/200 fair 4.00ms (the fix: a PTHREAD_PRIO_INHERIT mutex, libedfd(3));")
    ok(want in text and "cause lock;" in text, f"{kind} mutex: the job's line names the lock and its holder", text)
    ok(t["lock_waits"] == 1 and t["lock_waits_plain_woken_by_non_deadline"] == (0 if pi else 1),
       f"{kind} mutex: the thread's possible inversions: {0 if pi else 1}", t)

# On several CPUs the kernel's rt_mutex spins while the holder runs elsewhere: the waiter is in
# FUTEX_LOCK_PI and runs, on its own budget, without sleeping; that time is shown (and is lock time).
L = [switch(0, BASE - 4 * MS, P, -1, "S", IDLE, 120),
     wakeup(0, BASE, P, 0), switch(0, BASE, IDLE, 120, "R", P, -1),
     futex_enter(0, BASE + 500 * 1000, P, 0x86), futex_exit(0, BASE + 2500 * 1000, P),
     switch(0, BASE + 4 * MS, P, -1, "S", IDLE, 120)]
th = T(100, 3 * MS, 10 * MS, 10 * MS)
th.source, th.reservation = "tid", None
an = analyse([th], L)
jobs = [j for j in an.tasks[100].jobs if j.finish is not None and j.complete]
ok(len(jobs) == 1 and jobs[0].pi_call == 2 * MS and jobs[0].pi_awake == 2 * MS and not jobs[0].blocks,
   "PI lock taken spinning: 2 ms in the call, all of it awake, no sleep", [(j.pi_call, j.pi_awake, j.blocks) for j in jobs])
rep = tr.summarize(an, [th], {}, {"start": BASE - 10 * MS, "stop": BASE + 20 * MS, "interrupted": False, "steal_ns": {},
                   "deadline_tracepoints": []}, type("A", (), {"all_jobs": True})())
r = rep["threads"][0]["late_or_throttled_jobs"]
text = tr.job_line(rep["threads"][0], r[0], 4 * MS) if r else ""
ok("in PI lock calls 2.00ms, 2.00ms of it awake (the kernel's rt_mutex spins while the holder runs on another CPU, "
   "on the waiter's budget);" in text, "PI lock taken spinning: the line says so", text)

print(f"1..{n}")
sys.exit(1 if failed else 0)
