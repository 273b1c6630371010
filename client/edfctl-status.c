/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `edfctl status` and `edfctl list`: one snapshot of the daemon's books, printed as an indented
 * tree and tables for people, or as one JSON document for scripts (json-c; numbers in ns and in
 * fractions of a CPU, which are exact in a double because the bus unit is 2^-20).
 *
 * The snapshot is libedfd's (edfd_snapshot_fetch(): the calls it needs sent at once, one round
 * trip, the answers describing one moment); edfctl copies it into rows it can sort and print. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "basic/proc.h"
#include "core/bandwidth.h"
#include "core/duration.h"
#include "edfctl.h"
#include "shared/protocol.h"

typedef struct GroupRow {
        const char *path;          /* points into the snapshot */
        uint64_t runtime, period, bw, allocated;
        uint32_t n_reservations, n_groups;
        const char *cgroup, *fork, *threads;
        int anyone;                /* anyone may use it; else users (none: nobody but root) */
        const char *const *users;
        int dynamic, overridden;
        uint64_t min_split_runtime;
        int reclaim;               /* -1: an older edfd did not say */
        const char *placement;     /* "global", "partitioned", "" from an older edfd */
        unsigned depth;
} GroupRow;

typedef struct ReservationRow {
        uint64_t id;
        uint32_t pid, tid;
        const char *group;         /* points into the snapshot */
        uint64_t runtime, deadline, period, bw, flags, split_from, donated;
        uint32_t uid;
        uint32_t cpu;              /* partitioned placement: its CPU; RESERVATION_GLOBAL: global */
        int64_t throttles;         /* -1: not counted */
        int64_t lock_waits;        /* -1: not counted */
        char comm[17];             /* "" when the thread is not visible */
} ReservationRow;

#define RESERVATION_GLOBAL UINT32_MAX

typedef struct Props {
        const char *version;
        uint64_t capacity, allocated, unmanaged, kernel_capacity;
        unsigned waiting_at_start;
        const char *throttle_counting; /* "on", why not, or "" (an older edfd) */
        const char *lock_wait_counting; /* the same for possible lock waits */
        int kernel_admission, overcommitted;
        uint32_t n_reservations, n_groups;
        uint64_t events_seen, events_lost, resyncs, unseen_children;
} Props;

typedef struct PartitionRow {
        const char *name;          /* points into the snapshot */
        uint32_t cpu, reservations;
        uint64_t capacity, allocated;
} PartitionRow;

/* libedfd's snapshot (one round trip for all the calls), and its rows as edfctl prints them. */
typedef struct Snapshot {
        edfd_snapshot *snapshot;
        GroupRow *groups;
        size_t n_groups;
        ReservationRow *reservations;
        size_t n_reservations;
        Props props;
        bool have_partitions;      /* edfd answered ListPartitions (an older one does not know it) */
        const char *placement_note;
        PartitionRow *partitions;
        size_t n_partitions;
} Snapshot;

static void snapshot_done(Snapshot *s) {
        free(s->groups);
        free(s->reservations);
        free(s->partitions);
        edfd_snapshot_free(s->snapshot);
}

/* Group paths in pre-order: "/" first, a parent before its children, '/' sorting before every
 * other character so that "audio/x" comes right after "audio" and before "audio-b". */
static int path_compare(const char *a, const char *b) {
        if (strcmp(a, "/") == 0 || strcmp(b, "/") == 0)
                return (strcmp(b, "/") == 0) - (strcmp(a, "/") == 0);
        for (;; a++, b++) {
                unsigned char x = *a == '/' ? 1 : (unsigned char) *a, y = *b == '/' ? 1 : (unsigned char) *b;
                if (x != y || x == 0)
                        return (x > y) - (x < y);
        }
}

static int group_row_compare(const void *a, const void *b) {
        return path_compare(((const GroupRow *) a)->path, ((const GroupRow *) b)->path);
}

static unsigned path_depth(const char *path) {
        unsigned d = 1;

        if (strcmp(path, "/") == 0)
                return 0;
        for (const char *p = path; *p; p++)
                d += *p == '/';
        return d;
}

/* The snapshot's rows, in the order they are printed. Returns 0 or -ENOMEM. */
static int snapshot_rows(Snapshot *s) {
        const edfd_snapshot *x = s->snapshot;

        s->n_groups = edfd_snapshot_n_groups(x);
        s->n_reservations = edfd_snapshot_n_reservations(x);
        s->n_partitions = edfd_snapshot_n_partitions(x);
        s->groups = calloc(MAX(s->n_groups, (size_t) 1), sizeof *s->groups);
        s->reservations = calloc(MAX(s->n_reservations, (size_t) 1), sizeof *s->reservations);
        s->partitions = calloc(MAX(s->n_partitions, (size_t) 1), sizeof *s->partitions);
        if (!s->groups || !s->reservations || !s->partitions)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_groups; i++) {
                const edfd_group *g = edfd_snapshot_group(x, i);
                s->groups[i] = (GroupRow) {
                        .path = edfd_group_path(g),
                        .runtime = edfd_group_runtime(g),
                        .period = edfd_group_period(g),
                        .bw = edfd_group_bandwidth(g),
                        .allocated = edfd_group_allocated(g),
                        .n_reservations = edfd_group_n_reservations(g),
                        .n_groups = edfd_group_n_groups(g),
                        .cgroup = edfd_group_cgroup(g),
                        .fork = edfd_group_fork(g),
                        .threads = edfd_group_threads(g),
                        .anyone = edfd_group_anyone(g),
                        .users = edfd_group_users(g),
                        .dynamic = edfd_group_dynamic(g),
                        .overridden = edfd_group_overridden(g),
                        .min_split_runtime = edfd_group_min_split_runtime(g),
                        .reclaim = edfd_group_reclaim(g),
                        .placement = edfd_group_placement(g),
                        .depth = path_depth(edfd_group_path(g)),
                };
        }
        if (s->n_groups > 0)
                qsort(s->groups, s->n_groups, sizeof *s->groups, group_row_compare);
        for (size_t i = 0; i < s->n_reservations; i++) {
                const edfd_reservation *v = edfd_snapshot_reservation(x, i);
                ReservationRow *w = &s->reservations[i];
                int cpu = edfd_reservation_cpu(v);
                *w = (ReservationRow) {
                        .id = edfd_reservation_id(v),
                        .pid = (uint32_t) edfd_reservation_pid(v),
                        .tid = (uint32_t) edfd_reservation_tid(v),
                        .group = edfd_reservation_group(v),
                        .runtime = edfd_reservation_runtime(v),
                        .deadline = edfd_reservation_deadline(v),
                        .period = edfd_reservation_period(v),
                        .bw = edfd_reservation_bandwidth(v),
                        .flags = edfd_reservation_flags(v),
                        .split_from = edfd_reservation_split_from(v),
                        .donated = edfd_reservation_donated(v),
                        .uid = (uint32_t) edfd_reservation_uid(v),
                        .cpu = cpu < 0 ? RESERVATION_GLOBAL : (uint32_t) cpu,
                        .throttles = edfd_reservation_throttles(v),
                        .lock_waits = edfd_reservation_lock_waits(v),
                };
                if (proc_thread_comm(w->pid, w->tid, w->comm) < 0)
                        w->comm[0] = '\0';
        }
        for (size_t i = 0; i < s->n_partitions; i++) {
                const edfd_partition *v = edfd_snapshot_partition(x, i);
                s->partitions[i] = (PartitionRow) {
                        .name = edfd_partition_name(v),
                        .cpu = edfd_partition_cpu(v),
                        .reservations = edfd_partition_n_reservations(v),
                        .capacity = edfd_partition_capacity(v),
                        .allocated = edfd_partition_allocated(v),
                };
        }
        s->have_partitions = edfd_snapshot_has_partitions(x);
        s->placement_note = edfd_snapshot_placement_note(x);
        s->props = (Props) {
                .version = edfd_status_version(x),
                .capacity = edfd_status_capacity(x),
                .allocated = edfd_status_allocated(x),
                .unmanaged = edfd_status_unmanaged(x),
                .kernel_capacity = edfd_status_kernel_capacity(x),
                .kernel_admission = edfd_status_kernel_admission(x),
                .overcommitted = edfd_status_overcommitted(x),
                .n_reservations = edfd_status_n_reservations(x),
                .n_groups = edfd_status_n_groups(x),
                .events_seen = edfd_status_events_seen(x),
                .events_lost = edfd_status_events_lost(x),
                .resyncs = edfd_status_resyncs(x),
                .unseen_children = edfd_status_unseen_children(x),
                .waiting_at_start = edfd_status_waiting_at_start(x),
                .throttle_counting = edfd_status_throttle_counting(x),
                .lock_wait_counting = edfd_status_lock_wait_counting(x),
        };
        return 0;
}

/* --- human output --- */

static const char *comm_or_dash(const ReservationRow *v) {
        return v->comm[0] ? tty(v->comm) : "-";
}

static void flags_format(uint64_t flags, char *buf, size_t size) {
        static const struct {
                uint64_t flag;
                const char *name;
        } names[] = {
                { EDFD_ADMIT_RECLAIM, "reclaim" },
                { EDFD_ADMIT_OVERRUN_SIGNAL, "overrun" },
                { EDFD_ADMIT_MOVE, "move" },
        };
        size_t n = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (flags & names[i].flag)
                        n += (size_t) snprintf(buf + n, size - MIN(n, size), "%s%s", n ? "," : "", names[i].name);
        if (flags & ~EDFD_ADMIT_ALL)
                snprintf(buf + n, size - MIN(n, size), "%s0x%" PRIx64, n ? "," : "", flags & ~EDFD_ADMIT_ALL);
        if (buf[0] == '\0')
                snprintf(buf, size, "-");
}

static const char *name_of(const GroupRow *g) {
        const char *slash = strrchr(g->path, '/');
        return tty(g->depth == 0 || !slash ? g->path : slash + 1);
}

/* The reservations of one group, as lines under it. One table for all of them, so that their
 * columns line up across groups. */
static int reservation_lines(const Snapshot *s, Table *t) {
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX], bw[DURATION_MAX];
        int r = 0;

        for (size_t i = 0; i < s->n_reservations; i++) {
                const ReservationRow *v = &s->reservations[i];
                r = r ?: table_add(t, "#%" PRIu64, v->id);
                r = r ?: table_add(t, "pid %" PRIu32, v->pid);
                r = r ?: table_add(t, "tid %" PRIu32, v->tid);
                r = r ?: table_add(t, "%s", comm_or_dash(v));
                r = r ?: table_add(t, "%s/%s/%s", duration_format(v->runtime, a), duration_format(v->deadline, b),
                                   duration_format(v->period, c));
                r = r ?: table_add(t, "%s", bw_format(v->bw, bw));
                if (v->cpu != RESERVATION_GLOBAL && v->split_from)
                        r = r ?: table_add(t, "cpu %" PRIu32 ", split from #%" PRIu64, v->cpu, v->split_from);
                else if (v->cpu != RESERVATION_GLOBAL)
                        r = r ?: table_add(t, "cpu %" PRIu32, v->cpu);
                else if (v->split_from)
                        r = r ?: table_add(t, "split from #%" PRIu64, v->split_from);
                else
                        r = r ?: table_add(t, "%s", "");
        }
        return r;
}

/* Under a reservation's line, when its thread was throttled or woken from a lock by a thread
 * without a deadline: how often (nothing for none, and nothing where edfd does not count: the
 * Throttles and Lock waits lines above say which), and for the lock waits where the fix is. */
static void throttles_line(const ReservationRow *v, unsigned indent) {
        if (v->throttles > 0)
                printf("%*s%" PRId64 " throttle%s since its admission\n", (int) indent + 4, "", v->throttles,
                       v->throttles == 1 ? "" : "s");
        if (v->lock_waits > 0)
                printf("%*s%" PRId64 " possible lock wait%s since its admission (woken from a futex wait by a "
                       "thread without a deadline; the fix: a PTHREAD_PRIO_INHERIT mutex, libedfd(3))\n",
                       (int) indent + 4, "", v->lock_waits, v->lock_waits == 1 ? "" : "s");
}

/* Print "LABEL: text" wrapped at 80 columns, continuation lines under the text. */
static void print_wrapped(const char *label, const char *text) {
        size_t col = 0, indent = strlen(label) + 2;

        printf("%s: ", label);
        col = indent;
        while (*text) {
                size_t w = strcspn(text, " ");
                if (col > indent && col + 1 + w > 80) {
                        printf("\n%*s", (int) indent, "");
                        col = indent;
                } else if (col > indent) {
                        putchar(' ');
                        col++;
                }
                printf("%.*s", (int) w, text);
                col += w;
                text += w;
                text += strspn(text, " ");
        }
        putchar('\n');
}

/* "LABEL: counted per reservation (shown under WHOM)", or "not counted: why"; nothing from an older
 * edfd (state NULL or ""). */
static void counting_line(const char *label, const char *state, const char *whom) {
        char why[600];

        if (!state || !*state)
                return;
        if (strcmp(state, "on") == 0) {
                printf("%s: counted per reservation (shown under %s)\n", label, whom);
                return;
        }
        snprintf(why, sizeof why, "not counted: %s", tty(state));
        print_wrapped(label, why);
}

/* What edfd can promise on this machine besides its books, read here (the facts are the machine's,
 * not edfd's): a virtual machine's CPUs run only while its host runs them, which no budget covers;
 * and the per-job overhead admit --work adds (edfctl calibrate), with the kernel's tick, at which
 * it enforces budgets. */
typedef struct MachineFacts {
        bool is_virtual;
        int calibration;  /* calibration_load(): 1 holds, 0 none, -ESTALE, else unreadable */
        Calibration cal;
        char why[512];
} MachineFacts;

static bool machine_is_virtual(void) {
        char buf[16384];
        const char *flags;

        /* x86 sets the hypervisor flag in a guest; elsewhere /sys/hypervisor/type names one. */
        if (proc_read_file(AT_FDCWD, "/proc/cpuinfo", PROC_READ_TRUNCATE, buf, sizeof buf, NULL) >= 0 &&
            (flags = strstr(buf, "\nflags"))) {
                size_t len = strcspn(flags + 1, "\n");
                char line[4096];
                snprintf(line, sizeof line, "%.*s ", (int) len, flags + 1);
                if (strstr(line, " hypervisor "))
                        return true;
        }
        return proc_read_file(AT_FDCWD, "/sys/hypervisor/type", PROC_READ_LINE | PROC_READ_TRUNCATE, buf, sizeof buf,
                              NULL) >= 0 && buf[0] != '\0' && buf[0] != '\n';
}

static void machine_facts(MachineFacts *f) {
        *f = (MachineFacts) { .is_virtual = machine_is_virtual() };
        f->calibration = calibration_load(calibration_path(), &f->cal, f->why, sizeof f->why);
}

static void machine_print(const MachineFacts *f) {
        char a[DURATION_MAX], b[DURATION_MAX], line[700];

        if (f->is_virtual)
                print_wrapped("     Machine", "a virtual machine: deadlines hold while its host runs its CPUs");
        else
                print_wrapped("     Machine", "no hypervisor seen: deadlines hold while budgets cover each job");
        if (f->calibration > 0) {
                if (f->cal.hz > 0)
                        snprintf(line, sizeof line, "%s per job (edfctl calibrate), added by --work; tick %s",
                                 duration_format(f->cal.overhead, a), duration_format(NSEC_PER_SEC / f->cal.hz, b));
                else
                        snprintf(line, sizeof line, "%s per job (edfctl calibrate), added by --work",
                                 duration_format(f->cal.overhead, a));
        } else if (f->calibration == 0)
                snprintf(line, sizeof line, "not measured; --work adds none (see edfctl calibrate)");
        else
                snprintf(line, sizeof line, "not used: %s", f->why);
        print_wrapped("    Overhead", line);
}

static int json_machine(const MachineFacts *f, json_object **ret) {
        json_object *o = json_object_new_object();
        char state[600];
        int r = 0;

        if (!o)
                return -ENOMEM;
        if (f->calibration > 0)
                snprintf(state, sizeof state, "ok");
        else if (f->calibration == 0)
                snprintf(state, sizeof state, "none");
        else
                snprintf(state, sizeof state, "%s: %s", f->calibration == -ESTALE ? "stale" : "unreadable", f->why);
        JSON_ADD(o, "virtual", json_object_new_boolean(f->is_virtual), r);
        JSON_ADD(o, "calibration", json_text(state), r);
        JSON_ADD(o, "per_job_overhead", f->calibration > 0 ? json_object_new_uint64(f->cal.overhead) : NULL, r);
        JSON_ADD(o, "tick", f->calibration > 0 && f->cal.hz > 0 ? json_object_new_uint64(NSEC_PER_SEC / f->cal.hz) : NULL, r);
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}

/* What edfd promises a group's threads, and why, from its placement and this machine (edfd(8),
 * PLACEMENT): "deadlines" where an exact EDF test admits on each CPU (a partition, or a machine
 * with one CPU), "bounded tardiness" under global EDF on several CPUs, "none" where the group's
 * partitioned placement is refused on this machine. "" when an older edfd did not say. */
typedef enum Promise { PROMISE_UNKNOWN, PROMISE_DEADLINES, PROMISE_TARDINESS, PROMISE_NONE, _PROMISE_MAX } Promise;

static const char *const promise_names[_PROMISE_MAX] = {
        [PROMISE_UNKNOWN] = "", [PROMISE_DEADLINES] = "deadlines", [PROMISE_TARDINESS] = "bounded tardiness",
        [PROMISE_NONE] = "none",
};

static Promise group_promise(const Snapshot *s, const GroupRow *g) {
        if (!g->placement || !g->placement[0])
                return PROMISE_UNKNOWN;
        if (strcmp(g->placement, "partitioned") == 0)
                return s->n_partitions > 0 ? PROMISE_DEADLINES : PROMISE_NONE;
        return sysconf(_SC_NPROCESSORS_ONLN) > 1 ? PROMISE_TARDINESS : PROMISE_DEADLINES;
}

/* The reason for a promise, one sentence. */
static void promise_why(const Snapshot *s, Promise p, bool reclaim, char *buf, size_t size) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        const char *rec = reclaim ? "; reclaim on: a job that overruns its runtime goes on in idle time"
                                  : "; reclaim off: a job that overruns its runtime waits for its next period";

        switch (p) {
        case PROMISE_DEADLINES:
                if (s->n_partitions > 0)
                        snprintf(buf, size, "partitioned: the exact EDF test on each CPU%s", rec);
                else
                        snprintf(buf, size, "one CPU: EDF meets what the test admits%s", rec);
                break;
        case PROMISE_TARDINESS:
                snprintf(buf, size, "global EDF on %ld CPUs bounds lateness, not deadlines (partitioned placement "
                         "promises deadlines: edfd(8), PLACEMENT)", n);
                break;
        case PROMISE_NONE:
                snprintf(buf, size, "partitioned placement, refused on this machine%s%s",
                         s->placement_note && *s->placement_note ? ": " : "",
                         s->placement_note ? s->placement_note : "");
                break;
        default:
                buf[0] = '\0';
        }
}

/* One line per promise that holds somewhere: the groups under it and why (deadlines once for the
 * groups that reclaim and once for those that do not: the reason differs). */
static void promise_print(const Snapshot *s) {
        for (Promise p = PROMISE_DEADLINES; p < _PROMISE_MAX; p++)
                for (int rec = 0; rec <= (p == PROMISE_DEADLINES); rec++) {
                        char line[2048], why[700];
                        size_t len;
                        bool any = false;

                        len = (size_t) snprintf(line, sizeof line, "%s for", promise_names[p]);
                        for (size_t i = 0; i < s->n_groups; i++) {
                                const GroupRow *g = &s->groups[i];
                                if (group_promise(s, g) != p || (p == PROMISE_DEADLINES && (g->reclaim > 0) != rec))
                                        continue;
                                if (len < sizeof line)
                                        len += (size_t) snprintf(line + len, sizeof line - len, "%s %s",
                                                                 any ? "," : "", g->path);
                                any = true;
                        }
                        if (!any)
                                continue;
                        promise_why(s, p, rec, why, sizeof why);
                        if (len < sizeof line)
                                snprintf(line + len, sizeof line - len, " (%s)", why);
                        print_wrapped("     Promise", tty(line));
                }
}

/* The placement lines of the status: what the promise is here. */
static void placement_print(const Snapshot *s) {
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX];
        bool note = s->placement_note && *s->placement_note && !strstr(s->placement_note, "names no partitions");

        if (!s->have_partitions)
                return;
        if (s->n_partitions == 0) {
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                if (n > 1)
                        printf("   Placement: global on %ld CPUs: bounded tardiness, not deadlines\n", n);
                else
                        printf("   Placement: global on one CPU: deadlines met while jobs keep to their runtime\n");
        } else {
                printf("   Placement: partitioned: the exact EDF test on each CPU\n");
                for (size_t i = 0; i < s->n_partitions; i++) {
                        const PartitionRow *v = &s->partitions[i];
                        printf("%s%s cpu%" PRIu32 ": %s capacity, %s allocated, %s free, %" PRIu32 " reservation%s\n",
                               i == 0 ? "  Partitions: " : "              ", tty(v->name), v->cpu, bw_format(v->capacity, a),
                               bw_format(v->allocated, b), bw_display_free(v->capacity, v->allocated, c),
                               v->reservations, v->reservations == 1 ? "" : "s");
                }
        }
        if (note)
                print_wrapped("        Note", tty(s->placement_note));
        promise_print(s);
}

static int status_print(const Snapshot *s) {
        _cleanup_(table_freep) Table *groups = NULL, *res = NULL;
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX];
        const Props *p = &s->props;
        int r = 0;

        printf("     Version: %s\n", tty(p->version));
        printf("    Capacity: %s (kernel %s, kernel admission %s)\n", bw_format(p->capacity, a),
               bw_format(p->kernel_capacity, b), p->kernel_admission ? "on" : "off");
        printf("   Allocated: %s (unmanaged deadline threads %s)\n", bw_format(p->allocated, a),
               bw_format(p->unmanaged, b));
        printf("        Free: %s\n", bw_display_free(p->capacity, p->allocated, c));
        printf("Reservations: %zu in %zu group%s\n", s->n_reservations, s->n_groups, s->n_groups == 1 ? "" : "s");
        if (p->waiting_at_start > 0)
                printf("     Waiting: %u process%s, to be admitted at %s program's start\n", p->waiting_at_start,
                       p->waiting_at_start == 1 ? "" : "es", p->waiting_at_start == 1 ? "its" : "their");
        printf("      Events: %" PRIu64 " seen, %" PRIu64 " lost, %" PRIu64 " resyncs, %" PRIu64
               " unseen children\n", p->events_seen, p->events_lost, p->resyncs, p->unseen_children);
        counting_line("   Throttles", p->throttle_counting, "those throttled");
        counting_line("  Lock waits", p->lock_wait_counting, "those that waited");
        MachineFacts mf;
        machine_facts(&mf);
        machine_print(&mf);
        if (p->overcommitted)
                printf("     Warning: over-committed (the kernel gives less than the books hold); "
                       "new admissions are refused\n");
        placement_print(s);

        groups = table_new(5);
        res = table_new(7);
        if (!groups || !res)
                return -ENOMEM;
        for (size_t i = 1; i < 5; i++)
                table_align_right(groups, i);
        table_align_right(res, 4);
        table_align_right(res, 5);

        r = r ?: table_add(groups, "GROUP");
        r = r ?: table_add(groups, "RUNTIME/PERIOD");
        r = r ?: table_add(groups, "BANDWIDTH");
        r = r ?: table_add(groups, "ALLOCATED");
        r = r ?: table_add(groups, "FREE");
        for (size_t i = 0; i < s->n_groups; i++) {
                const GroupRow *g = &s->groups[i];
                r = r ?: table_add(groups, "%*s%s", (int) (2 * g->depth), "", name_of(g));
                if (g->period == 0)
                        r = r ?: table_add(groups, "-");
                else
                        r = r ?: table_add(groups, "%s/%s", duration_format(g->runtime, a),
                                           duration_format(g->period, b));
                r = r ?: table_add(groups, "%s", bw_format(g->bw, a));
                r = r ?: table_add(groups, "%s", bw_format(g->allocated, a));
                r = r ?: table_add(groups, "%s", bw_display_free(g->bw, g->allocated, c));
        }
        r = r ?: reservation_lines(s, res);
        if (r < 0)
                return r;

        putchar('\n');
        table_print_row(groups, 0, stdout);
        for (size_t i = 0; i < s->n_groups; i++) {
                const GroupRow *g = &s->groups[i];
                table_print_row(groups, i + 1, stdout);
                for (size_t j = 0; j < s->n_reservations; j++)
                        if (strcmp(s->reservations[j].group, g->path) == 0) {
                                printf("%*s", (int) (2 * g->depth + 2), "");
                                table_print_row(res, j, stdout);
                                throttles_line(&s->reservations[j], 2 * g->depth + 2);
                        }
        }
        /* Reservations in a group the list did not show (a group removed between the calls). */
        for (size_t j = 0; j < s->n_reservations; j++) {
                bool found = false;
                for (size_t i = 0; i < s->n_groups && !found; i++)
                        found = strcmp(s->reservations[j].group, s->groups[i].path) == 0;
                if (!found) {
                        printf("  (in %s) ", tty(s->reservations[j].group));
                        table_print_row(res, j, stdout);
                        throttles_line(&s->reservations[j], 2);
                }
        }
        return 0;
}

static int list_print(const Snapshot *s) {
        _cleanup_(table_freep) Table *t = NULL;
        char a[DURATION_MAX], fl[128];
        bool any_flags = false, any_split = false;
        int r = 0;

        if (s->n_reservations == 0) {
                puts("No reservations.");
                return 0;
        }
        t = table_new(12);
        if (!t)
                return -ENOMEM;
        /* One blank between columns: the right-aligned headers leave room enough, and a row with
         * seven-digit pids and flags still fits 80 columns. */
        table_set_separator(t, 1);
        static const char *const headers[] = { "ID", "GROUP", "PID", "TID", "COMM", "RUNTIME", "DEADLINE",
                                               "PERIOD", "BW", "FLAGS", "SPLIT-FROM", "CPU" };
        bool any_cpu = false;
        for (size_t i = 0; i < ELEMENTSOF(headers); i++)
                r = r ?: table_add(t, "%s", headers[i]);
        for (size_t i = 0; i < ELEMENTSOF(headers); i++)
                if (i != 1 && i != 4 && i != 9)
                        table_align_right(t, i);
        for (size_t i = 0; i < s->n_reservations; i++) {
                const ReservationRow *v = &s->reservations[i];
                r = r ?: table_add(t, "%" PRIu64, v->id);
                r = r ?: table_add(t, "%s", tty(v->group));
                r = r ?: table_add(t, "%" PRIu32, v->pid);
                r = r ?: table_add(t, "%" PRIu32, v->tid);
                r = r ?: table_add(t, "%s", comm_or_dash(v));
                r = r ?: table_add(t, "%s", duration_format(v->runtime, a));
                r = r ?: table_add(t, "%s", duration_format(v->deadline, a));
                r = r ?: table_add(t, "%s", duration_format(v->period, a));
                r = r ?: table_add(t, "%s", bw_format(v->bw, a));
                flags_format(v->flags, fl, sizeof fl);
                r = r ?: table_add(t, "%s", fl);
                if (v->split_from)
                        r = r ?: table_add(t, "%" PRIu64, v->split_from);
                else
                        r = r ?: table_add(t, "-");
                if (v->cpu != RESERVATION_GLOBAL)
                        r = r ?: table_add(t, "%" PRIu32, v->cpu);
                else
                        r = r ?: table_add(t, "-");
                any_flags = any_flags || v->flags != 0;
                any_split = any_split || v->split_from != 0;
                any_cpu = any_cpu || v->cpu != RESERVATION_GLOBAL;
        }
        if (r < 0)
                return r;
        if (!any_flags)
                table_hide(t, 9);
        if (!any_split)
                table_hide(t, 10);
        if (!any_cpu)
                table_hide(t, 11);
        table_print(t, stdout);
        return 0;
}

/* --- JSON output --- */

/* Who may use a group: JSON null for anyone, else the list of user names (empty: nobody but root). */
static int json_users(const GroupRow *g, json_object **ret) {
        json_object *a;

        if (g->anyone) {
                *ret = NULL;
                return 0;
        }
        a = json_object_new_array();
        if (!a)
                return -ENOMEM;
        for (const char *const *u = g->users; u && *u; u++)
                if (json_object_array_add(a, json_text(*u)) < 0) {
                        json_object_put(a);
                        return -ENOMEM;
                }
        *ret = a;
        return 0;
}

static json_object *json_reservation(const ReservationRow *v) {
        json_object *o = json_object_new_object(), *fl = json_object_new_array();
        int r = 0;

        if (!o || !fl) {
                json_object_put(o);
                json_object_put(fl);
                return NULL;
        }
        if (v->flags & EDFD_ADMIT_RECLAIM)
                r = r ?: (json_object_array_add(fl, json_object_new_string("reclaim")) < 0 ? -ENOMEM : 0);
        if (v->flags & EDFD_ADMIT_OVERRUN_SIGNAL)
                r = r ?: (json_object_array_add(fl, json_object_new_string("overrun-signal")) < 0 ? -ENOMEM : 0);
        if (v->flags & EDFD_ADMIT_MOVE)
                r = r ?: (json_object_array_add(fl, json_object_new_string("move")) < 0 ? -ENOMEM : 0);
        JSON_ADD(o, "id", json_object_new_uint64(v->id), r);
        JSON_ADD(o, "group", json_text(v->group), r);
        JSON_ADD(o, "pid", json_object_new_uint64(v->pid), r);
        JSON_ADD(o, "tid", json_object_new_uint64(v->tid), r);
        JSON_ADD(o, "comm", v->comm[0] ? json_text(v->comm) : NULL, r);
        JSON_ADD(o, "runtime", json_object_new_uint64(v->runtime), r);
        JSON_ADD(o, "deadline", json_object_new_uint64(v->deadline), r);
        JSON_ADD(o, "period", json_object_new_uint64(v->period), r);
        JSON_ADD(o, "bandwidth", json_bw(v->bw), r);
        JSON_ADD(o, "flags", json_object_new_uint64(v->flags), r);
        JSON_ADD(o, "flag_names", fl, r);
        JSON_ADD(o, "split_from", v->split_from ? json_object_new_uint64(v->split_from) : NULL, r);
        JSON_ADD(o, "donated", v->split_from ? json_object_new_uint64(v->donated) : NULL, r);
        JSON_ADD(o, "cpu", v->cpu != RESERVATION_GLOBAL ? json_object_new_uint64(v->cpu) : NULL, r);
        JSON_ADD(o, "throttles", v->throttles >= 0 ? json_object_new_int64(v->throttles) : NULL, r);
        JSON_ADD(o, "lock_waits", v->lock_waits >= 0 ? json_object_new_int64(v->lock_waits) : NULL, r);
        JSON_ADD(o, "uid", json_object_new_uint64(v->uid), r);
        if (r < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static json_object *json_group(const Snapshot *s, const GroupRow *g) {
        json_object *o = json_object_new_object(), *users = NULL;
        Promise p = group_promise(s, g);
        char why[700];
        int r = 0;

        promise_why(s, p, g->reclaim > 0, why, sizeof why);

        if (!o)
                return NULL;
        r = json_users(g, &users);
        JSON_ADD(o, "path", json_text(g->path), r);
        JSON_ADD(o, "depth", json_object_new_uint64(g->depth), r);
        JSON_ADD(o, "runtime", json_object_new_uint64(g->runtime), r);
        JSON_ADD(o, "period", json_object_new_uint64(g->period), r);
        JSON_ADD(o, "bandwidth", json_bw(g->bw), r);
        JSON_ADD(o, "allocated", json_bw(g->allocated), r);
        JSON_ADD(o, "free", g->bw == UINT64_MAX ? NULL :
                 json_object_new_double(((double) g->bw - (double) g->allocated) / (double) BW_UNIT), r);
        JSON_ADD(o, "reservations", json_object_new_uint64(g->n_reservations), r);
        JSON_ADD(o, "groups", json_object_new_uint64(g->n_groups), r);
        JSON_ADD(o, "cgroup", g->cgroup[0] ? json_text(g->cgroup) : NULL, r);
        JSON_ADD(o, "fork", json_text(g->fork), r);
        JSON_ADD(o, "threads", json_text(g->threads), r);
        JSON_ADD(o, "users", users, r);
        JSON_ADD(o, "dynamic", json_object_new_boolean(g->dynamic), r);
        JSON_ADD(o, "overridden", json_object_new_boolean(g->overridden), r);
        JSON_ADD(o, "min_split_runtime", json_object_new_uint64(g->min_split_runtime), r);
        JSON_ADD(o, "reclaim", g->reclaim < 0 ? NULL : json_object_new_boolean(g->reclaim), r);
        JSON_ADD(o, "placement", g->placement[0] ? json_object_new_string(g->placement) : NULL, r);
        JSON_ADD(o, "promise", p ? json_object_new_string(promise_names[p]) : NULL, r);
        JSON_ADD(o, "promise_why", p ? json_text(why) : NULL, r);
        if (r < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static int json_reservations(const Snapshot *s, json_object **ret) {
        json_object *a = json_object_new_array();

        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_reservations; i++) {
                json_object *o = json_reservation(&s->reservations[i]);
                if (!o || json_object_array_add(a, o) < 0) {
                        json_object_put(o);
                        json_object_put(a);
                        return -ENOMEM;
                }
        }
        *ret = a;
        return 0;
}

static int json_status(const Snapshot *s, json_object **ret) {
        const Props *p = &s->props;
        json_object *o = json_object_new_object(), *groups = json_object_new_array(), *events = NULL,
                    *res = NULL;
        int r = 0;

        if (!o || !groups) {
                json_object_put(o);
                json_object_put(groups);
                return -ENOMEM;
        }
        for (size_t i = 0; i < s->n_groups && r == 0; i++) {
                json_object *g = json_group(s, &s->groups[i]);
                if (!g || json_object_array_add(groups, g) < 0) {
                        json_object_put(g);
                        r = -ENOMEM;
                }
        }
        r = r ?: json_reservations(s, &res);
        events = json_object_new_object();
        if (!events)
                r = -ENOMEM;
        JSON_ADD(events, "seen", json_object_new_uint64(p->events_seen), r);
        JSON_ADD(events, "lost", json_object_new_uint64(p->events_lost), r);
        JSON_ADD(events, "resyncs", json_object_new_uint64(p->resyncs), r);
        JSON_ADD(events, "unseen_children", json_object_new_uint64(p->unseen_children), r);

        JSON_ADD(o, "version", json_text(p->version), r);
        JSON_ADD(o, "capacity", json_bw(p->capacity), r);
        JSON_ADD(o, "kernel_capacity", json_bw(p->kernel_capacity), r);
        JSON_ADD(o, "kernel_admission", json_object_new_boolean(p->kernel_admission), r);
        JSON_ADD(o, "allocated", json_bw(p->allocated), r);
        JSON_ADD(o, "unmanaged", json_bw(p->unmanaged), r);
        JSON_ADD(o, "waiting_at_start", json_object_new_int64(p->waiting_at_start), r);
        JSON_ADD(o, "throttle_counting",
                 p->throttle_counting && *p->throttle_counting ? json_text(p->throttle_counting) : NULL, r);
        JSON_ADD(o, "lock_wait_counting",
                 p->lock_wait_counting && *p->lock_wait_counting ? json_text(p->lock_wait_counting) : NULL, r);
        JSON_ADD(o, "free", p->capacity == UINT64_MAX ? NULL :
                 json_object_new_double(((double) p->capacity - (double) p->allocated) / (double) BW_UNIT), r);
        JSON_ADD(o, "overcommitted", json_object_new_boolean(p->overcommitted), r);
        MachineFacts mf;
        json_object *machine = NULL;
        machine_facts(&mf);
        if (r == 0 && json_machine(&mf, &machine) < 0)
                r = -ENOMEM;
        JSON_ADD(o, "machine", machine, r);
        JSON_ADD(o, "events", events, r);
        JSON_ADD(o, "groups", groups, r);
        JSON_ADD(o, "reservations", res, r);
        if (s->have_partitions) {
                json_object *parts = json_object_new_array();
                if (!parts)
                        r = r ?: -ENOMEM;
                for (size_t i = 0; parts && r == 0 && i < s->n_partitions; i++) {
                        const PartitionRow *v = &s->partitions[i];
                        json_object *e = json_object_new_object();
                        if (!e || json_object_array_add(parts, e) < 0) {
                                json_object_put(e);
                                r = -ENOMEM;
                                break;
                        }
                        JSON_ADD(e, "name", json_text(v->name), r);
                        JSON_ADD(e, "cpu", json_object_new_uint64(v->cpu), r);
                        JSON_ADD(e, "capacity", json_bw(v->capacity), r);
                        JSON_ADD(e, "allocated", json_bw(v->allocated), r);
                        JSON_ADD(e, "reservations", json_object_new_uint64(v->reservations), r);
                }
                JSON_ADD(o, "placement", json_object_new_string(s->n_partitions ? "partitioned" : "global"), r);
                JSON_ADD(o, "placement_note", json_text(s->placement_note ?: ""), r);
                JSON_ADD(o, "partitions", parts, r);
        }
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}

/* --- the verbs --- */

static int snapshot_run(const Args *a, unsigned want, bool status) {
        _cleanup_(edfd_closep) edfd *e = NULL;
        Snapshot s = {};
        json_object *o = NULL;
        int r, ex;

        ex = edfctl_connect(&e);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        r = edfd_snapshot_fetch(e, want, &s.snapshot);
        if (r < 0)
                return edfctl_failed(e, r, "the query");
        r = snapshot_rows(&s);
        if (r < 0) {
                fprintf(stderr, "edfctl: %s\n", strerror(-r));
                ex = EDFCTL_EXIT_FAILED;
                goto finish;
        }

        if (a->given & ARG_JSON) {
                r = status ? json_status(&s, &o) : json_reservations(&s, &o);
                r = r ?: json_print(o);
                json_object_put(o);
        } else
                r = status ? status_print(&s) : list_print(&s);
        if (r < 0) {
                fprintf(stderr, "edfctl: cannot print: %s\n", strerror(-r));
                ex = EDFCTL_EXIT_FAILED;
                goto finish;
        }
        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "edfctl: cannot write the output: %s\n", strerror(errno));
                ex = EDFCTL_EXIT_FAILED;
        }
finish:
        snapshot_done(&s);
        return ex;
}

int verb_status(const Args *a) {
        return snapshot_run(a, EDFD_SNAPSHOT_ALL, true);
}

int verb_list(const Args *a) {
        return snapshot_run(a, EDFD_SNAPSHOT_RESERVATIONS, false);
}
