#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The cost of edfd-oci-hook, side by side with its peers, in one run (alternating A and B).

  bench-edfd -- bench-oci-hook.py HOOK EDFCTL [--iterations N] [--starts N] [--no-podman]

1. The hook at createRuntime, exec to exit (the OCI state on stdin, a bundle, a parked process;
   with the default start-up rule: its group made and AdmitAtStart asked), against a one-shot
   `edfctl admit -T 4ms -P 10ms -p PID` of such a process, exec to exit.
   Releasing (the hook's poststop, `edfctl release`) is done between samples and not timed.
   The target: at most 1.2x.
2. A container start (`podman run --rm ... true`, busybox-static, offline) without the hook (no
   annotation: the hooks file does not match) and with it, for each reservation of
   --container-reservations, alternating; medians of N starts each. Reported, no target. With the
   hook and org.edfd.startup=0s, the rest of runc init after its wake-up, the exec and the
   program run on the container's reservation: a small one makes the start slower by the
   start-up's CPU time divided by the reservation's share, which is not the hook's cost (part 1
   is). With the default start-up rule they run unreserved, and the process is admitted when
   its program first sleeps.

Runs against the edfd of bench-edfd (DBUS_SYSTEM_BUS_ADDRESS); admits into its group "bench"."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def median_ms(xs):
    return statistics.median(xs) / 1e6


def spread(xs):
    return f"{min(xs) / 1e6:.2f}-{max(xs) / 1e6:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hook")
    ap.add_argument("edfctl")
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--no-podman", action="store_true")
    ap.add_argument("--container-reservations", default="1ms/10ms,1ms/10ms/0s",
                    help="the reservations the containers ask, RUNTIME/PERIOD[/STARTUP] (STARTUP: "
                         "org.edfd.startup, 0s admits at createRuntime), comma-separated")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="bench-oci-hook.")
    os.chmod(tmp, 0o711)
    procs = []
    try:
        cfg = os.path.join(tmp, "oci-hook.yaml")
        with open(cfg, "w") as f:
            f.write("default-group: bench\ngroups:\n  bench: 100%\n")
        bundle = os.path.join(tmp, "bundle")
        os.mkdir(bundle)
        with open(os.path.join(bundle, "config.json"), "w") as f:
            json.dump({"ociVersion": "1.0.2", "process": {"args": ["sh"]}}, f)

        ann = {"org.edfd.runtime": "4ms", "org.edfd.period": "10ms"}

        def state(i, status, pid):
            return json.dumps({"ociVersion": "1.0.2", "id": f"bench{i:08d}", "status": status,
                               "pid": pid, "bundle": bundle, "annotations": ann}).encode()

        def timed(cmd, stdin=None):
            t0 = time.perf_counter_ns()
            p = subprocess.run(cmd, input=stdin, capture_output=True)
            t1 = time.perf_counter_ns()
            if p.returncode != 0:
                sys.exit(f"bench-oci-hook: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.decode().strip()}")
            return t1 - t0

        def parked():
            """A process that stays parked, as runc init is until the start; a fresh one each time,
            so that edfd's watch of it (which waits for its exec) ends with it."""
            v = subprocess.Popen(["sleep", "3600"])
            procs.append(v)
            return v

        def done(v):
            v.kill()
            v.wait()
            procs.remove(v)

        hook_ns, edfctl_ns = [], []
        warmup = 3
        for i in range(a.iterations + warmup):
            v = parked()
            h = timed([a.hook, "--config", cfg, "createRuntime"], state(i, "creating", v.pid))
            subprocess.run([a.hook, "--config", cfg, "poststop"], input=state(i, "stopped", v.pid), check=True)
            done(v)
            v = parked()
            e = timed([a.edfctl, "admit", "-g", "bench", "-T", "4ms", "-P", "10ms", "-p", str(v.pid)])
            subprocess.run([a.edfctl, "release", "-p", str(v.pid)], check=True, capture_output=True)
            done(v)
            if i >= warmup:
                hook_ns.append(h)
                edfctl_ns.append(e)
        ratio = statistics.median(hook_ns) / statistics.median(edfctl_ns)
        verdict = "met" if ratio <= 1.2 else "MISSED"
        print(f"oci-hook createRuntime, exec to exit: {median_ms(hook_ns):.2f} ms ({spread(hook_ns)}), "
              f"edfctl admit -p: {median_ms(edfctl_ns):.2f} ms ({spread(edfctl_ns)}), "
              f"{ratio:.3f}x (target <= 1.2x: {verdict}); {a.iterations} each, alternating, {warmup} discarded")
        print(f"@row\toci-hook: createRuntime, exec to exit\t{median_ms(hook_ns):.2f} ms ({spread(hook_ns)})\t"
              f"edfctl admit -p {median_ms(edfctl_ns):.2f} ms\t{ratio:.3f}x\t<= 1.2x\t{verdict}")

        if a.no_podman:
            return 0
        if not shutil.which("podman") or not shutil.which("runc"):
            print("container start: not measured (podman or runc missing: apt-get install podman runc busybox-static)")
            return 0
        rootfs = os.path.join(tmp, "rootfs")
        for d in ("bin", "proc", "sys", "dev", "etc", "tmp"):
            os.makedirs(os.path.join(rootfs, d))
        shutil.copy("/bin/busybox", os.path.join(rootfs, "bin", "busybox"))
        os.symlink("busybox", os.path.join(rootfs, "bin", "true"))
        hooks = os.path.join(tmp, "hooks")
        os.mkdir(hooks)
        bus = os.environ["DBUS_SYSTEM_BUS_ADDRESS"]
        for stage in ("createRuntime", "poststop"):
            with open(os.path.join(hooks, f"edfd-{stage}.json"), "w") as f:
                json.dump({"version": "1.0.0",
                           "hook": {"path": a.hook, "args": ["edfd-oci-hook", "--config", cfg, stage],
                                    "env": [f"DBUS_SYSTEM_BUS_ADDRESS={bus}"]},
                           "when": {"annotations": {r"^org\.edfd\.runtime$": ".*"}},
                           "stages": [stage]}, f)
        base = ["podman", "--root", f"{tmp}/storage", "--runroot", f"{tmp}/run", "--tmpdir", f"{tmp}/libpod",
                "--cgroup-manager=cgroupfs", "--runtime", "runc", "--events-backend", "none",
                "--hooks-dir", hooks]
        run = ["run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024",
               "--ulimit", "nproc=1024:1024"]
        tail = ["--rootfs", rootfs, "true"]
        variants = [(v.split("/") + [None])[:3] for v in a.container_reservations.split(",")]
        with_ns = {"/".join(x for x in v if x): [] for v in variants}
        without_ns = []
        had_parent = {d for d in os.listdir("/sys/fs/cgroup") if os.path.isdir(f"/sys/fs/cgroup/{d}/libpod_parent")}
        try:
            for i in range(a.starts + 1):
                wo = timed(base + run + tail)
                if i >= 1:
                    without_ns.append(wo)
                for r, p, st in variants:
                    extra = ["--annotation", f"org.edfd.startup={st}"] if st else []
                    w = timed(base + run + ["--annotation", f"org.edfd.runtime={r}", "--annotation",
                                            f"org.edfd.period={p}"] + extra + tail)
                    if i >= 1:
                        with_ns["/".join(x for x in (r, p, st) if x)].append(w)
        finally:
            subprocess.run(base + ["system", "reset", "-f"], capture_output=True)
            for d in os.listdir("/sys/fs/cgroup"):
                p = f"/sys/fs/cgroup/{d}/libpod_parent"
                if d not in had_parent and os.path.isdir(p):
                    for root, dirs, _ in os.walk(p, topdown=False):
                        for x in dirs:
                            os.rmdir(os.path.join(root, x))
                    os.rmdir(p)
        print(f"container start (podman run --rm ... true), medians of {a.starts} alternating starts, 1 discarded:")
        print(f"  without the hook: {median_ms(without_ns):.1f} ms ({spread(without_ns)})")
        for k, xs in with_ns.items():
            print(f"  with the hook, {k}: {median_ms(xs):.1f} ms ({spread(xs)}), "
                  f"{median_ms(xs) - median_ms(without_ns):+.1f} ms")
            print(f"@row\toci-hook: container start, {k}\t{median_ms(xs):.1f} ms\twithout the hook "
                  f"{median_ms(without_ns):.1f} ms\t{statistics.median(xs) / statistics.median(without_ns):.2f}x\t-\treported")
        return 0
    finally:
        for p in list(procs):
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
