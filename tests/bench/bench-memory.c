/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* edfd's memory, idle and with 10,000 reservations, and its call latency at that scale (issue 5).
 *
 *   bench-memory [--runs 3] [--reservations 10000] [--helpers 4]
 *
 * 1. Idle: VmRSS of a fresh edfd (bench-edfd starts one per benchmark), against the peer: a minimal
 *    sd-bus server (connected, one object with one method, idle in its sd-event loop).
 * 2. Each run: --helpers processes with --reservations sleeping threads between them; every thread
 *    is admitted with 10 us every 1 s (10,000 of them hold 0.1 CPU), 16 calls in flight. Then
 *    edfd's VmRSS and VmHWM, the sync Admit/Release p50 of one more thread against the Echo p50
 *    at that scale, then ReleaseProcess for each helper, and VmRSS after.
 * Targets: idle < 4 MiB, with 10,000 reservations < 16 MiB. Runs under bench-edfd; asserts nothing. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "bench-lib.h"
#include "shared/protocol.h"

#define RUNTIME (10 * NSEC_PER_USEC)
#define PERIOD NSEC_PER_SEC
#define IN_FLIGHT 16
#define LATENCY_PAIRS 500

/* --- the peer: a minimal sd-bus server --- */

static int peer_echo(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        uint64_t v;
        int r = sd_bus_message_read(m, "t", &v);

        return r < 0 ? r : sd_bus_reply_method_return(m, "t", v);
}

static const sd_bus_vtable peer_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Echo", "t", "t", peer_echo, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

static pid_t peer_start(void) {
        int p[2];
        pid_t pid;
        char c = 1;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
                sd_event *e = NULL;
                sd_bus *bus = NULL;
                close(p[0]);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (sd_event_default(&e) < 0 || sd_bus_open_system(&bus) < 0 ||
                    sd_bus_add_object_vtable(bus, NULL, "/bench", "org.edfd.Bench", peer_vtable, NULL) < 0 ||
                    sd_bus_attach_event(bus, e, 0) < 0 ||
                    sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                       "GetId", NULL, NULL, "") < 0)
                        _exit(1);
                if (write(p[1], &c, 1) != 1)
                        _exit(1);
                close(p[1]);
                (void) sd_event_loop(e);
                _exit(0);
        }
        close(p[1]);
        if (pid < 0 || read(p[0], &c, 1) != 1) {
                close(p[0]);
                return -ECHILD;
        }
        close(p[0]);
        return pid;
}

/* --- admitting many --- */

typedef struct Call Call;

typedef struct Batch {
        sd_bus *bus;
        const BenchHelper *helpers;
        unsigned n_helpers;
        unsigned next_helper, next_thread;
        uint64_t sent, done, total;
        Call *calls; /* one per Admit sent */
        int failed;
} Batch;

struct Call {
        Batch *batch;
        pid_t pid, tid;
};

static int batch_send(Batch *b, Call *c);

static int batch_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Call *c = userdata;
        Batch *b = c->batch;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        b->done++;
        if (e && sd_bus_error_has_name(e, EDFD_ERROR_KERNEL_REFUSED)) {
                /* The machine-wide pool was full for a moment (another user): the same call again. */
                bench_kernel_busy++;
                b->done--;
                return batch_send(b, c);
        }
        if (e) {
                if (!b->failed)
                        fprintf(stderr, "bench-memory: Admit failed after %" PRIu64 ": %s\n", b->done,
                                e->message ? e->message : e->name);
                b->failed = -EIO;
                return 0;
        }
        if (!b->failed && b->sent < b->total)
                (void) batch_send(b, NULL);
        return 0;
}

/* Send the Admit of c again, or (c NULL) of the next thread. */
static int batch_send(Batch *b, Call *c) {
        int r;

        if (!c) {
                const BenchHelper *h;
                while (b->next_thread >= b->helpers[b->next_helper].n) {
                        b->next_helper++;
                        b->next_thread = 0;
                }
                h = &b->helpers[b->next_helper];
                c = &b->calls[b->sent++];
                *c = (Call) { b, h->pid, h->tids[b->next_thread++] };
        }
        r = sd_bus_call_method_async(b->bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Admit",
                                     batch_reply, c, "uustttt", (uint32_t) c->pid, (uint32_t) c->tid, BENCH_GROUP,
                                     RUNTIME, PERIOD, PERIOD, UINT64_C(0));
        if (r < 0)
                b->failed = r;
        return r;
}

static int admit_all(sd_bus *bus, const BenchHelper *helpers, unsigned n_helpers, uint64_t total) {
        Batch b = { .bus = bus, .helpers = helpers, .n_helpers = n_helpers, .total = total };
        int r = 0;

        b.calls = calloc(total, sizeof(Call));
        if (!b.calls)
                return -ENOMEM;
        for (unsigned i = 0; i < IN_FLIGHT && b.sent < total; i++)
                if (batch_send(&b, NULL) < 0)
                        goto finish;
        /* Until every call sent has its answer (also after a failure: the books must settle). */
        while (b.done < b.sent) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        break;
                if (r == 0)
                        (void) sd_bus_wait(bus, UINT64_MAX);
        }
finish:
        free(b.calls);
        return r < 0 ? r : b.failed;
}

static int release_process(sd_bus *bus, pid_t pid, uint32_t *ret_n) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "ReleaseProcess", &error, &reply,
                               "u", (uint32_t) pid);
        if (r >= 0)
                r = sd_bus_message_read(reply, "u", ret_n);
        if (r < 0)
                fprintf(stderr, "bench-memory: ReleaseProcess(%d): %s\n", (int) pid,
                        error.message ? error.message : strerror(-r));
        sd_bus_message_unref(reply);
        sd_bus_error_free(&error);
        return r < 0 ? r : 0;
}

static uint64_t echo_ns(sd_bus *bus) {
        uint64_t t0 = bench_now_ns();

        if (sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Echo", NULL, NULL, "t",
                               UINT64_C(1)) < 0) {
                fprintf(stderr, "bench-memory: Echo failed\n");
                exit(1);
        }
        return bench_now_ns() - t0;
}

/* How many more fds edfd may open: its soft RLIMIT_NOFILE less what it holds now. */
static long fds_left(pid_t pid) {
        char path[64], line[256];
        long limit = -1, open_now = 0;
        FILE *f;
        DIR *d;

        snprintf(path, sizeof path, "/proc/%d/limits", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, "Max open files", 14) == 0)
                        limit = strtol(line + 14, NULL, 10);
        fclose(f);
        snprintf(path, sizeof path, "/proc/%d/fd", (int) pid);
        d = opendir(path);
        if (!d)
                return -errno;
        while (readdir(d))
                open_now++;
        closedir(d);
        return limit < 0 ? -EBADMSG : limit - open_now;
}

static double mib(long kib) {
        return (double) kib / 1024.0;
}

int main(int argc, char *argv[]) {
        unsigned runs = bench_runs(argc, argv, 3), n_helpers = 4;
        uint64_t n_res = 10000;
        pid_t edfd = bench_edfd_pid(), peer;
        long idle, idle_peer;
        sd_bus *bus;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--reservations") == 0 && i + 1 < argc)
                        n_res = strtoull(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--helpers") == 0 && i + 1 < argc)
                        n_helpers = (unsigned) strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
                        i++;
                else {
                        fprintf(stderr, "usage: bench-memory [--runs N] [--reservations N] [--helpers N]\n");
                        return 2;
                }
        }
        if (n_res == 0 || n_res > 30000 || n_helpers == 0 || n_helpers > 64) {
                fprintf(stderr, "bench-memory: need 1..30000 reservations and 1..64 helpers\n");
                return 2;
        }

        /* 1. Idle, before this program asked edfd anything. */
        idle = bench_status_kib(edfd, "VmRSS");
        peer = peer_start();
        if (peer < 0) {
                fprintf(stderr, "bench-memory: the peer sd-bus server did not start\n");
                return 1;
        }
        usleep(100000);
        idle_peer = bench_status_kib(peer, "VmRSS");
        kill(peer, SIGKILL);
        waitpid(peer, NULL, 0);
        printf("idle: edfd VmRSS %.2f MiB, a minimal sd-bus server %.2f MiB\n", mib(idle), mib(idle_peer));
        {
                char a[64], b[96], c[32];
                snprintf(a, sizeof a, "%.2f MiB", mib(idle));
                snprintf(b, sizeof b, "minimal sd-bus server %.2f MiB", mib(idle_peer));
                snprintf(c, sizeof c, "%.2fx", (double) idle / (double) idle_peer);
                bench_row("edfd RSS, idle", a, b, c, "< 4 MiB", bench_verdict(idle < 4 * 1024));
        }

        /* edfd holds one pidfd per reservation (the thread's, with PIDFD_THREAD; else the process's).
         * Where the fd limit cannot be raised that far (a container without CAP_SYS_RESOURCE), admit
         * what fits and project to the requested number from the per-reservation growth. */
        uint64_t wanted = n_res;
        long left = fds_left(edfd);
        if (left > 0 && (uint64_t) (left - 64) < n_res) {
                n_res = (uint64_t) (left - 64);
                printf("edfd may open only %ld more fds (RLIMIT_NOFILE): %" PRIu64 " reservations instead of %" PRIu64
                       ", and the RSS projected to %" PRIu64 "\n",
                       left, n_res, wanted, wanted);
        }

        bus = bench_bus_open();
        double *rss = calloc(runs, sizeof(double)), *hwm = calloc(runs, sizeof(double)),
               *after = calloc(runs, sizeof(double)), *t_admit = calloc(runs, sizeof(double)),
               *t_release = calloc(runs, sizeof(double)), *a50 = calloc(runs, sizeof(double)),
               *r50 = calloc(runs, sizeof(double)), *e50 = calloc(runs, sizeof(double)),
               *ra = calloc(runs, sizeof(double)), *rr = calloc(runs, sizeof(double));
        BenchHelper *helpers = calloc(n_helpers, sizeof(BenchHelper)), extra;
        uint64_t *lat_a = calloc(LATENCY_PAIRS, sizeof(uint64_t)), *lat_r = calloc(LATENCY_PAIRS, sizeof(uint64_t)),
                 *lat_e = calloc(2 * LATENCY_PAIRS, sizeof(uint64_t));
        if (bench_helper_spawn(1, &extra) < 0)
                return 1;

        for (unsigned run = 0; run < runs; run++) {
                uint64_t t0, released = 0;
                BenchBooks b;

                for (unsigned i = 0; i < n_helpers; i++) {
                        unsigned n = (unsigned) (n_res / n_helpers + (i < n_res % n_helpers));
                        int r = bench_helper_spawn(n ? n : 1, &helpers[i]);
                        if (r < 0) {
                                fprintf(stderr, "bench-memory: helper with %u threads: %s\n", n, strerror(-r));
                                return 1;
                        }
                }
                t0 = bench_now_ns();
                if (admit_all(bus, helpers, n_helpers, n_res) < 0)
                        return 1;
                t_admit[run] = (double) (bench_now_ns() - t0);
                if (bench_books(bus, &b) < 0)
                        return 1;
                rss[run] = (double) bench_status_kib(edfd, "VmRSS");
                hwm[run] = (double) bench_status_kib(edfd, "VmHWM");

                /* Call latency with n_res reservations in the books. */
                for (unsigned i = 0; i < LATENCY_PAIRS; i++) {
                        uint64_t id, t;
                        lat_e[2 * i] = echo_ns(bus);
                        t = bench_now_ns();
                        if (bench_admit(bus, extra.pid, extra.pid, BENCH_GROUP, RUNTIME, PERIOD, &id) < 0)
                                return 1;
                        lat_a[i] = bench_now_ns() - t;
                        lat_e[2 * i + 1] = echo_ns(bus);
                        t = bench_now_ns();
                        if (bench_release(bus, id) < 0)
                                return 1;
                        lat_r[i] = bench_now_ns() - t;
                }
                bench_sort_u64(lat_a, LATENCY_PAIRS);
                bench_sort_u64(lat_r, LATENCY_PAIRS);
                bench_sort_u64(lat_e, 2 * LATENCY_PAIRS);
                a50[run] = (double) bench_quantile(lat_a, LATENCY_PAIRS, 0.5);
                r50[run] = (double) bench_quantile(lat_r, LATENCY_PAIRS, 0.5);
                e50[run] = (double) bench_quantile(lat_e, 2 * LATENCY_PAIRS, 0.5);
                ra[run] = a50[run] / e50[run];
                rr[run] = r50[run] / e50[run];

                t0 = bench_now_ns();
                for (unsigned i = 0; i < n_helpers; i++) {
                        uint32_t n = 0;
                        if (release_process(bus, helpers[i].pid, &n) < 0)
                                return 1;
                        released += n;
                }
                t_release[run] = (double) (bench_now_ns() - t0);
                for (unsigned i = 0; i < n_helpers; i++)
                        bench_helper_kill(&helpers[i]);
                after[run] = (double) bench_status_kib(edfd, "VmRSS");
                printf("run %u: %" PRIu64 " reservations admitted in %.2f s (%.0f/s); VmRSS %.2f MiB, VmHWM %.2f MiB; "
                       "Admit p50 %.0f us, Release p50 %.0f us, Echo p50 %.0f us; released %" PRIu64
                       " in %.2f s; VmRSS after %.2f MiB\n",
                       run + 1, b.reservations, t_admit[run] / 1e9, (double) n_res * 1e9 / t_admit[run], mib((long) rss[run]),
                       mib((long) hwm[run]), a50[run] / 1e3, r50[run] / 1e3, e50[run] / 1e3, released, t_release[run] / 1e9,
                       mib((long) after[run]));
                fflush(stdout);
        }

        {
                char fig[96], a[96], b[96], c[96], pa[128];
                BenchSpread s = bench_spread(rss, runs);

                snprintf(fig, sizeof fig, "edfd RSS, %" PRIu64 " reservations", n_res);
                bench_fmt(a, sizeof a, s, 1024, "MiB", 2);
                bench_fmt(b, sizeof b, bench_spread(hwm, runs), 1024, "MiB", 2);
                snprintf(pa, sizeof pa, "VmHWM %s", b);
                if (n_res == wanted)
                        bench_row(fig, a, pa, "", "< 16 MiB", bench_verdict(s.median < 16 * 1024));
                else {
                        /* Linear in the number of reservations: idle + n x (growth per reservation). */
                        double per = (s.median - (double) idle) / (double) n_res;
                        double projected = (double) idle + per * (double) wanted;
                        bench_row(fig, a, pa, "", "", "");
                        snprintf(fig, sizeof fig, "edfd RSS, %" PRIu64 " (projected)", wanted);
                        snprintf(a, sizeof a, "%.2f MiB (%.0f bytes per reservation)", projected / 1024, per * 1024);
                        snprintf(pa, sizeof pa, "fd limit: measured at %" PRIu64, n_res);
                        bench_row(fig, a, pa, "", "< 16 MiB", bench_verdict(projected < 16 * 1024));
                }

                bench_fmt(a, sizeof a, bench_spread(after, runs), 1024, "MiB", 2);
                bench_row("edfd RSS, after releasing them", a, "", "", "", "");

                snprintf(fig, sizeof fig, "Admit p50 with %" PRIu64 " reserved", n_res);
                bench_fmt(a, sizeof a, bench_spread(a50, runs), 1e3, "us", 0);
                bench_fmt(b, sizeof b, bench_spread(e50, runs), 1e3, "us", 0);
                bench_fmt(c, sizeof c, bench_spread(ra, runs), 1, "x", 2);
                snprintf(pa, sizeof pa, "Echo p50 %s", b);
                bench_row(fig, a, pa, c, "<= 1.3x", bench_verdict(bench_spread(ra, runs).median <= 1.3));

                snprintf(fig, sizeof fig, "Release p50 with %" PRIu64 " reserved", n_res);
                bench_fmt(a, sizeof a, bench_spread(r50, runs), 1e3, "us", 0);
                bench_fmt(c, sizeof c, bench_spread(rr, runs), 1, "x", 2);
                bench_row(fig, a, pa, c, "<= 1.3x", bench_verdict(bench_spread(rr, runs).median <= 1.3));

                double *rate = calloc(runs, sizeof(double));
                for (unsigned run = 0; run < runs; run++)
                        rate[run] = (double) n_res * 1e9 / t_admit[run];
                snprintf(fig, sizeof fig, "admitting %" PRIu64 ", 16 in flight", n_res);
                bench_fmt(a, sizeof a, bench_spread(rate, runs), 1, "/s", 0);
                bench_row(fig, a, "", "", "", "");
                free(rate);
        }
        bench_helper_kill(&extra);
        free(rss);
        free(hwm);
        free(after);
        free(t_admit);
        free(t_release);
        free(a50);
        free(r50);
        free(e50);
        free(ra);
        free(rr);
        free(helpers);
        free(lat_a);
        free(lat_r);
        free(lat_e);
        bench_note_interference();
        sd_bus_flush_close_unref(bus);
        return 0;
}
