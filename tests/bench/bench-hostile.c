/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Root's Echo while unprivileged callers attack with every method at the shipped rate limit (issue
 * 41: "root's Echo under 10 ms p99 while nobody attacks with every method at its shipped rate
 * limit").
 *
 *   bench-edfd --config conf/edfd.yaml -- bench-hostile [--runs 2] [--phase 10] [--interval-us 2000]
 *                                                       [--scenarios 1x1,4x1,4x4]
 *
 * Run it on the shipped configuration (conf/edfd.yaml: every user but root may make 50 requests,
 * admissions, updates and plans, per 10 s, hold 32 reservations and 30% of a CPU). Root calls Echo
 * every interval (2 ms), one call at a time, and times each. An attacker is a process of an
 * unprivileged uid with 8 sleeping processes of its own; it calls, one call at a time and as fast
 * as the replies come, every method of the manager in turn with the costliest arguments it may
 * pass: Admit (1 ms / 100 ms, of its own sleeping processes), AdmitSplit, AdmitAtStart (a watch on
 * one of its processes), Update, Plan (1,024 tasks), the releases, the lists, Subscribe,
 * Unsubscribe, Echo, the four that need root (refused), and the properties and the introspection
 * besides. Once its 50 requests of a window are spent edfd refuses those five methods at once; the
 * others have no rate limit at all.
 *
 * A scenario CxU is C attackers spread over U uids (nobody, then the user database's first users:
 * daemon, bin, ...; dbus-daemon refuses a uid it has no entry for): the limit is per uid, so
 * 4x1 is four clients sharing nobody's 50 per 10 s, 4x4 four users with 50 each. Each scenario
 * measures phases of --phase seconds, quiet (root's Echo alone) and attacked, in the order Q A A Q
 * per run, so that this shared machine's drifts fall on both alike; the attackers of a phase exit
 * at its end, and the next phase starts once edfd has dropped what they held (their reservations
 * and watches). Per phase: root's Echo p50, p99 and max, edfd's and dbus-daemon's CPU (all their
 * threads, /proc/PID/task/ * /schedstat) as % of one CPU, the attackers' calls per second and how
 * many of the five limited methods edfd let through. Printed with the median of the runs and the
 * spread; the target row per scenario is Echo p99 < 10 ms under attack. Asserts nothing. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-lib.h"
#include "shared/protocol.h"

#define MAX_ATTACKERS 16
#define SLEEPERS 8
#define PLAN_TASKS 1024
#define MS_NS (1000 * UINT64_C(1000))

/* What an attacker tells the benchmark when it stops. */
typedef struct AttackStats {
        uint64_t calls, ok, limited, refused, failed, ns;
        uint64_t limited_ok; /* calls of the five rate-limited methods that got past the limiter */
} AttackStats;

static volatile sig_atomic_t stop_attack;

static void on_stop(int sig) {
        (void) sig;
        stop_attack = 1;
}

static uint64_t task_cpu_ns(pid_t pid) {
        char path[64];
        uint64_t sum = 0;
        struct dirent *de;
        DIR *d;

        if (pid <= 0)
                return 0;
        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                char p[320];
                unsigned long long v;
                FILE *f;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(p, sizeof p, "/proc/%d/task/%s/schedstat", (int) pid, de->d_name);
                f = fopen(p, "re");
                if (f && fscanf(f, "%llu", &v) == 1)
                        sum += v;
                if (f)
                        fclose(f);
        }
        closedir(d);
        return sum;
}

/* ---- the attacker ---- */

static bool is_limited(const char *member) {
        return strcmp(member, "Admit") == 0 || strcmp(member, "AdmitSplit") == 0 || strcmp(member, "AdmitAtStart") == 0 ||
               strcmp(member, "Update") == 0 || strcmp(member, "Plan") == 0;
}

static int append_plan(sd_bus_message *m) {
        int r = sd_bus_message_open_container(m, 'a', "(sstttb)");

        for (unsigned i = 0; r >= 0 && i < PLAN_TASKS; i++) {
                char name[32];
                snprintf(name, sizeof name, "t%u", i);
                /* Small and different tasks, as a plan of many would be: every one is decided. */
                r = sd_bus_message_append(m, "(sstttb)", name, "default", (uint64_t) (1024 + 64 * (i % 64)), UINT64_C(0),
                                          100 * MS_NS, (int) (i % 2));
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

/* One call of the round; returns sd_bus_call's result, *ret_error filled. */
static int attack_call(sd_bus *bus, const char *member, const pid_t *sleepers, unsigned round, uint64_t *id,
                       sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        pid_t target = sleepers[round % SLEEPERS];
        const char *iface = EDFD_BUS_INTERFACE;
        int r;

        if (strcmp(member, "GetAll") == 0)
                iface = "org.freedesktop.DBus.Properties";
        else if (strcmp(member, "Introspect") == 0)
                iface = "org.freedesktop.DBus.Introspectable";
        r = sd_bus_message_new_method_call(bus, &m, EDFD_BUS_NAME, EDFD_BUS_PATH, iface, member);
        if (r < 0)
                return r;
        if (strcmp(member, "Admit") == 0)
                r = sd_bus_message_append(m, "uustttt", (uint32_t) target, UINT32_C(0), "default", MS_NS, UINT64_C(0),
                                          100 * MS_NS, UINT64_C(0));
        else if (strcmp(member, "AdmitSplit") == 0)
                r = sd_bus_message_append(m, "uuustttt", (uint32_t) target, (uint32_t) target, (uint32_t) target, "default",
                                          MS_NS, UINT64_C(0), 100 * MS_NS, UINT64_C(0));
        else if (strcmp(member, "AdmitAtStart") == 0)
                r = sd_bus_message_append(m, "usttttt", (uint32_t) sleepers[(round + 1) % SLEEPERS], "default", MS_NS,
                                          UINT64_C(0), 100 * MS_NS, UINT64_C(0), 1000 * MS_NS);
        else if (strcmp(member, "Update") == 0)
                r = sd_bus_message_append(m, "tttt", *id, 2 * MS_NS, UINT64_C(0), 100 * MS_NS);
        else if (strcmp(member, "Release") == 0)
                r = sd_bus_message_append(m, "t", *id);
        else if (strcmp(member, "ReleaseThread") == 0 || strcmp(member, "ReleaseProcess") == 0)
                r = sd_bus_message_append(m, "u", (uint32_t) sleepers[(round + 3) % SLEEPERS]);
        else if (strcmp(member, "Plan") == 0)
                r = append_plan(m);
        else if (strcmp(member, "CreateGroup") == 0 || strcmp(member, "SetGroup") == 0)
                r = sd_bus_message_append(m, "stt", "default", MS_NS, 100 * MS_NS);
        else if (strcmp(member, "RemoveGroup") == 0)
                r = sd_bus_message_append(m, "s", "default");
        else if (strcmp(member, "Echo") == 0)
                r = sd_bus_message_append(m, "t", UINT64_C(7));
        else if (strcmp(member, "GetAll") == 0)
                r = sd_bus_message_append(m, "s", EDFD_BUS_INTERFACE);
        if (r < 0)
                return r;
        r = sd_bus_call(bus, m, 30 * UINT64_C(1000000), ret_error, &reply);
        if (r >= 0 && strcmp(member, "Admit") == 0)
                (void) sd_bus_message_read(reply, "t", id);
        else if (r >= 0 && strcmp(member, "Release") == 0)
                *id = 0;
        return r;
}

static void *sleeper_thread(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

_Noreturn static void attacker_main(uid_t uid, int fd) {
        static const char *const members[] = { "Admit", "ListReservations", "AdmitSplit", "ListGroups", "AdmitAtStart",
                                               "ListPartitions", "Update", "Subscribe", "Plan", "Unsubscribe",
                                               "Release", "ReleaseThread", "ReleaseProcess", "CreateGroup", "SetGroup",
                                               "RemoveGroup", "Reload", "Echo", "GetAll", "Introspect" };
        pid_t parent = getppid(), sleepers[SLEEPERS];
        AttackStats st = {};
        sd_bus *bus = NULL;
        uint64_t id = 0, t0;
        char ready = 1;
        int r;

        if (fd != 3 && dup2(fd, 3) < 0)
                _exit(10);
        fd = 3;
        (void) close_range(4, ~0U, 0);
        if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
                _exit(11);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
                _exit(12);
        signal(SIGXCPU, SIG_IGN);
        {
                struct sigaction sa = { .sa_handler = on_stop };
                sigaction(SIGUSR1, &sa, NULL);
        }
        for (unsigned i = 0; i < SLEEPERS; i++) {
                pid_t me = getpid();
                sleepers[i] = fork();
                if (sleepers[i] < 0)
                        _exit(13);
                if (sleepers[i] == 0) {
                        pthread_t t;
                        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                        if (getppid() != me)
                                _exit(0);
                        (void) pthread_create(&t, NULL, sleeper_thread, NULL);
                        for (;;)
                                pause();
                }
        }
        r = sd_bus_open_system(&bus);
        if (r < 0)
                _exit(14);
        if (write(fd, &ready, 1) != 1)
                _exit(15);

        t0 = bench_now_ns();
        for (unsigned round = 0; !stop_attack; round++)
                for (size_t k = 0; k < ELEMENTSOF(members) && !stop_attack; k++) {
                        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                        r = attack_call(bus, members[k], sleepers, round, &id, &e);
                        st.calls++;
                        if (r >= 0) {
                                st.ok++;
                                st.limited_ok += is_limited(members[k]);
                        } else if (sd_bus_error_has_name(&e, EDFD_ERROR_LIMIT_EXCEEDED))
                                st.limited++;
                        else if (e.name)
                                st.refused++;
                        else if (r != -EINTR)
                                st.failed++;
                        if (r >= 0 && strcmp(members[k], "Subscribe") == 0)
                                while (sd_bus_process(bus, NULL) > 0)
                                        ;
                }
        st.ns = bench_now_ns() - t0;
        if (write(fd, &st, sizeof st) != (ssize_t) sizeof st)
                _exit(16);
        for (unsigned i = 0; i < SLEEPERS; i++)
                kill(sleepers[i], SIGKILL);
        for (unsigned i = 0; i < SLEEPERS; i++)
                (void) waitpid(sleepers[i], NULL, 0);
        _exit(0);
}

typedef struct Attackers {
        unsigned n;
        pid_t pid[MAX_ATTACKERS];
        int fd[MAX_ATTACKERS];
} Attackers;

/* nobody first, then users of the user database (dbus-daemon refuses a uid it has no entry for): the
 * uid of the ith of users. */
static uid_t attacker_uid(unsigned i) {
        struct passwd *pw;
        unsigned k = 0;

        if (i == 0)
                return 65534;
        setpwent();
        while ((pw = getpwent()))
                if (pw->pw_uid != 0 && pw->pw_uid != 65534 && ++k == i) {
                        uid_t uid = pw->pw_uid;
                        endpwent();
                        return uid;
                }
        endpwent();
        fprintf(stderr, "bench-hostile: the user database has fewer than %u users besides root and nobody\n", i);
        exit(1);
}

static void attackers_start(Attackers *a, unsigned clients, unsigned users) {
        a->n = clients;
        for (unsigned i = 0; i < clients; i++) {
                int p[2];
                char ready;
                if (pipe2(p, O_CLOEXEC) < 0) {
                        perror("bench-hostile: pipe");
                        exit(1);
                }
                fflush(stdout);
                a->pid[i] = fork();
                if (a->pid[i] < 0) {
                        perror("bench-hostile: fork");
                        exit(1);
                }
                if (a->pid[i] == 0) {
                        close(p[0]);
                        attacker_main(attacker_uid(i % users), p[1]);
                }
                close(p[1]);
                a->fd[i] = p[0];
                if (read(a->fd[i], &ready, 1) != 1) {
                        int status = 0;
                        (void) waitpid(a->pid[i], &status, 0);
                        fprintf(stderr, "bench-hostile: attacker %u did not start (status 0x%x)\n", i, status);
                        exit(1);
                }
        }
}

static void attackers_stop(Attackers *a, AttackStats *sum) {
        *sum = (AttackStats) {};
        for (unsigned i = 0; i < a->n; i++)
                kill(a->pid[i], SIGUSR1);
        for (unsigned i = 0; i < a->n; i++) {
                AttackStats st;
                int status;
                if (read(a->fd[i], &st, sizeof st) != (ssize_t) sizeof st) {
                        fprintf(stderr, "bench-hostile: attacker %u ended without its figures\n", i);
                        exit(1);
                }
                close(a->fd[i]);
                (void) waitpid(a->pid[i], &status, 0);
                sum->calls += st.calls;
                sum->ok += st.ok;
                sum->limited += st.limited;
                sum->refused += st.refused;
                sum->failed += st.failed;
                sum->limited_ok += st.limited_ok;
                sum->ns = MAX(sum->ns, st.ns);
        }
}

/* Wait (at most 10 s) until what the attackers held is gone. */
static void wait_settled(sd_bus *bus) {
        uint64_t end = bench_now_ns() + 10 * NSEC_PER_SEC, res = 1, waiting = 1;

        while (bench_now_ns() < end) {
                if (bench_property_u64(bus, "Reservations", &res) < 0 || bench_property_u64(bus, "WaitingAtStart", &waiting) < 0)
                        break;
                if (res == 0 && waiting == 0)
                        return;
                usleep(20000);
        }
        printf("  note: edfd still holds %" PRIu64 " reservations and %" PRIu64 " watches 10 s after the attackers left\n",
               res, waiting);
}

/* ---- phases ---- */

typedef struct Phase {
        double p50, p99, max, edfd_cpu, bus_cpu, attack_rate, limited_ok;
        size_t echoes;
} Phase;

static Phase run_phase(sd_bus *bus, bool attacked, unsigned clients, unsigned users, uint64_t phase_ns,
                       uint64_t interval_ns, pid_t edfd, pid_t busd) {
        Attackers a = {};
        AttackStats st = {};
        size_t cap = (size_t) (phase_ns / interval_ns) + 16, n = 0;
        uint64_t *lat = calloc(cap, sizeof *lat), t0, t1, next, e0, e1, b0, b1;
        Phase ph = {};

        if (!lat)
                exit(1);
        if (attacked)
                attackers_start(&a, clients, users);
        e0 = task_cpu_ns(edfd);
        b0 = task_cpu_ns(busd);
        t0 = next = bench_now_ns();
        while (bench_now_ns() - t0 < phase_ns && n < cap) {
                bench_sleep_until(next);
                lat[n++] = bench_echo(bus);
                next += interval_ns;
                if (next < bench_now_ns())
                        next = bench_now_ns(); /* behind: the next call at once, not a burst */
        }
        t1 = bench_now_ns();
        e1 = task_cpu_ns(edfd);
        b1 = task_cpu_ns(busd);
        if (attacked)
                attackers_stop(&a, &st);
        wait_settled(bus);

        bench_sort_u64(lat, n);
        ph.echoes = n;
        ph.p50 = (double) bench_quantile(lat, n, 0.50);
        ph.p99 = (double) bench_quantile(lat, n, 0.99);
        ph.max = (double) lat[n - 1];
        ph.edfd_cpu = 100.0 * (double) (e1 - e0) / (double) (t1 - t0);
        ph.bus_cpu = 100.0 * (double) (b1 - b0) / (double) (t1 - t0);
        if (attacked) {
                ph.attack_rate = st.ns ? (double) st.calls * 1e9 / (double) st.ns : 0;
                ph.limited_ok = (double) st.limited_ok;
                printf("    attacked: Echo p50 %.3f p99 %.3f max %.3f ms (%zu calls), edfd %.1f%% dbus-daemon %.1f%% of a "
                       "CPU; attackers %.0f calls/s (%" PRIu64 " answered, %" PRIu64 " rate-limited, %" PRIu64
                       " refused otherwise, %" PRIu64 " failed), %" PRIu64 " limited calls let through\n",
                       ph.p50 / 1e6, ph.p99 / 1e6, ph.max / 1e6, n, ph.edfd_cpu, ph.bus_cpu, ph.attack_rate, st.ok,
                       st.limited, st.refused, st.failed, st.limited_ok);
        } else
                printf("    quiet:    Echo p50 %.3f p99 %.3f max %.3f ms (%zu calls), edfd %.1f%% dbus-daemon %.1f%% of a "
                       "CPU\n",
                       ph.p50 / 1e6, ph.p99 / 1e6, ph.max / 1e6, n, ph.edfd_cpu, ph.bus_cpu);
        fflush(stdout);
        free(lat);
        return ph;
}

static void usage(void) {
        fprintf(stderr, "usage: bench-hostile [--runs N] [--phase SECONDS] [--interval-us N] [--scenarios CxU,...]\n");
        exit(2);
}

int main(int argc, char *argv[]) {
        unsigned runs = bench_runs(argc, argv, 2);
        uint64_t phase_ns = 10 * NSEC_PER_SEC, interval_ns = 2 * MS_NS;
        const char *scenarios = "1x1,4x1,4x4";
        pid_t edfd = bench_edfd_pid(), busd = getenv("EDFD_BUS_PID") ? (pid_t) atoi(getenv("EDFD_BUS_PID")) : 0;
        sd_bus *bus;
        char *list, *save = NULL;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--phase") == 0 && i + 1 < argc)
                        phase_ns = strtoull(argv[++i], NULL, 10) * NSEC_PER_SEC;
                else if (strcmp(argv[i], "--interval-us") == 0 && i + 1 < argc)
                        interval_ns = strtoull(argv[++i], NULL, 10) * 1000;
                else if (strcmp(argv[i], "--scenarios") == 0 && i + 1 < argc)
                        scenarios = argv[++i];
                else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
                        i++;
                else
                        usage();
        }
        if (phase_ns == 0 || interval_ns == 0)
                usage();
        signal(SIGPIPE, SIG_IGN);
        /* bench-edfd's directory (mkdtemp: 0700) holds the bus socket: the attackers' uids must be able
         * to reach it. Searchable, not listable. */
        if (!getenv("EDFD_BENCH_DIR") || chmod(getenv("EDFD_BENCH_DIR"), 0711) < 0) {
                fprintf(stderr, "bench-hostile: cannot open bench-edfd's directory to other uids: %s\n",
                        getenv("EDFD_BENCH_DIR") ? strerror(errno) : "EDFD_BENCH_DIR is not set (run under bench-edfd)");
                return 1;
        }
        bus = bench_bus_open();
        for (unsigned i = 0; i < 200; i++) /* warm up: credentials, page faults */
                bench_echo(bus);

        list = strdup(scenarios);
        if (!list)
                return 1;
        for (char *sc = strtok_r(list, ",", &save); sc; sc = strtok_r(NULL, ",", &save)) {
                unsigned clients, users;
                double *v[6];
                if (sscanf(sc, "%ux%u", &clients, &users) != 2 || clients == 0 || users == 0 || users > clients ||
                    clients > MAX_ATTACKERS) {
                        fprintf(stderr, "bench-hostile: scenario %s: want CxU, 1 <= U <= C <= %d\n", sc, MAX_ATTACKERS);
                        return 2;
                }
                for (unsigned k = 0; k < ELEMENTSOF(v); k++)
                        v[k] = calloc(2 * runs, sizeof(double));
                /* v: 0 quiet p99, 1 attacked p99, 2 quiet edfd CPU, 3 attacked edfd CPU, 4 attacked max,
                 *    5 attacked p50 */
                double *qp50 = calloc(2 * runs, sizeof(double)), *rate = calloc(2 * runs, sizeof(double)),
                       *through = calloc(2 * runs, sizeof(double));
                printf("scenario %s: %u attacker%s over %u uid%s, phases of %.0f s, root's Echo every %.1f ms\n", sc,
                       clients, clients > 1 ? "s" : "", users, users > 1 ? "s" : "", (double) phase_ns / 1e9,
                       (double) interval_ns / 1e6);
                for (unsigned run = 0; run < runs; run++) {
                        static const bool order[] = { false, true, true, false };
                        unsigned q = 0, a = 0;
                        printf("  run %u\n", run + 1);
                        for (size_t k = 0; k < ELEMENTSOF(order); k++) {
                                Phase ph = run_phase(bus, order[k], clients, users, phase_ns, interval_ns, edfd, busd);
                                if (order[k]) {
                                        v[1][2 * run + a] = ph.p99;
                                        v[3][2 * run + a] = ph.edfd_cpu;
                                        v[4][2 * run + a] = ph.max;
                                        v[5][2 * run + a] = ph.p50;
                                        rate[2 * run + a] = ph.attack_rate;
                                        through[2 * run + a] = ph.limited_ok;
                                        a++;
                                } else {
                                        v[0][2 * run + q] = ph.p99;
                                        v[2][2 * run + q] = ph.edfd_cpu;
                                        qp50[2 * run + q] = ph.p50;
                                        q++;
                                }
                        }
                }
                {
                        char a[96], b[96], c[96], d[96], e[96], f[96], g[96], h[96], row[96], peer[256];
                        unsigned n = 2 * runs;
                        BenchSpread p99 = bench_spread(v[1], n);
                        bench_fmt(a, sizeof a, bench_spread(v[5], n), 1e6, "ms", 3);
                        bench_fmt(b, sizeof b, p99, 1e6, "ms", 3);
                        bench_fmt(c, sizeof c, bench_spread(v[4], n), 1e6, "ms", 2);
                        bench_fmt(d, sizeof d, bench_spread(qp50, n), 1e6, "ms", 3);
                        bench_fmt(e, sizeof e, bench_spread(v[0], n), 1e6, "ms", 3);
                        bench_fmt(f, sizeof f, bench_spread(v[3], n), 1, "%", 1);
                        bench_fmt(g, sizeof g, bench_spread(v[2], n), 1, "%", 1);
                        bench_fmt(h, sizeof h, bench_spread(rate, n), 1, "calls/s", 0);
                        printf("  %s, %u phases of each, medians (min-max):\n", sc, n);
                        printf("    Echo under attack  p50 %s, p99 %s, max %s\n", a, b, c);
                        printf("    Echo quiet         p50 %s, p99 %s\n", d, e);
                        printf("    edfd's CPU         attacked %s, quiet %s; attackers %s, %.0f limited calls let "
                               "through per phase\n",
                               f, g, h, bench_spread(through, n).median);
                        snprintf(row, sizeof row, "Echo p99, %s attacking (%s)", clients == 1 ? "nobody" : sc,
                                 users == 1 ? "one uid" : "several uids");
                        snprintf(peer, sizeof peer, "quiet %s; edfd CPU %s", e, f);
                        /* Met only if every attacked phase's p99 is. */
                        bench_row(row, b, peer, "", "< 10 ms in every phase", bench_verdict(p99.max < 10e6));
                }
                fflush(stdout);
                for (unsigned k = 0; k < ELEMENTSOF(v); k++)
                        free(v[k]);
                free(qp50);
                free(rate);
                free(through);
        }
        free(list);
        sd_bus_flush_close_unref(bus);
        return 0;
}
