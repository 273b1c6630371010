/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `edfctl status` and `edfctl list`: one snapshot of the daemon's books, printed as an indented
 * tree and tables for people, or as one JSON document for scripts (json-c; numbers in ns and in
 * fractions of a CPU, which are exact in a double because the bus unit is 2^-20).
 *
 * The calls a snapshot needs (ListGroups, ListReservations, GetAll) are sent at once and their
 * replies collected afterwards: one round trip instead of three, and the three answers describe
 * the same moment unless something happened in the few microseconds between them. */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "core/bandwidth.h"
#include "core/duration.h"
#include "basic/strv.h"
#include "edfctl.h"
#include "shared/protocol.h"

typedef struct GroupRow {
        const char *path;          /* points into the reply */
        uint64_t runtime, period, bw, allocated;
        uint32_t n_reservations, n_groups;
        const char *cgroup, *fork, *threads;
        int anyone;                /* anyone may use it; else users (none: nobody but root) */
        char **users;              /* owned */
        int dynamic, overridden;
        uint64_t min_split_runtime;
        unsigned depth;
} GroupRow;

typedef struct ReservationRow {
        uint64_t id;
        uint32_t pid, tid;
        const char *group;         /* points into the reply */
        uint64_t runtime, deadline, period, bw, flags, split_from, donated;
        uint32_t uid;
        uint32_t cpu;              /* partitioned placement: its CPU; RESERVATION_GLOBAL: global */
        char comm[17];             /* "" when the thread is not visible */
} ReservationRow;

#define RESERVATION_GLOBAL UINT32_MAX

typedef struct Props {
        const char *version;
        uint64_t capacity, allocated, unmanaged, kernel_capacity;
        int kernel_admission, overcommitted;
        uint32_t n_reservations, n_groups;
        uint64_t events_seen, events_lost, resyncs, unseen_children;
} Props;

enum {
        CALL_GROUPS,
        CALL_RESERVATIONS,
        CALL_PROPERTIES,
        CALL_PARTITIONS,
        _CALL_MAX,
};

typedef struct PartitionRow {
        const char *name;          /* points into the reply */
        uint32_t cpu, reservations;
        uint64_t capacity, allocated;
} PartitionRow;

typedef struct Snapshot {
        sd_bus_message *replies[_CALL_MAX];
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
        for (size_t i = 0; i < _CALL_MAX; i++)
                sd_bus_message_unref(s->replies[i]);
        for (size_t i = 0; i < s->n_groups; i++)
                strv_free(s->groups[i].users);
        free(s->groups);
        free(s->reservations);
        free(s->partitions);
}

static const char *const call_names[_CALL_MAX] = {
        [CALL_GROUPS] = "ListGroups",
        [CALL_RESERVATIONS] = "ListReservations",
        [CALL_PROPERTIES] = "GetAll",
        [CALL_PARTITIONS] = "ListPartitions",
};

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        sd_bus_message **slot = userdata;

        *slot = sd_bus_message_ref(m);
        return 0;
}

/* Send the calls in `want` at once, then wait for all their replies. Returns an EdfctlExit. */
static int snapshot_fetch(sd_bus *bus, Snapshot *s, unsigned want) {
        int r;

        for (size_t i = 0; i < _CALL_MAX; i++) {
                if (!(want & (1u << i)))
                        continue;
                if (i == CALL_PROPERTIES)
                        r = sd_bus_call_method_async(bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH,
                                                     "org.freedesktop.DBus.Properties", "GetAll", on_reply,
                                                     &s->replies[i], "s", EDFD_BUS_INTERFACE);
                else
                        r = sd_bus_call_method_async(bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                                     call_names[i], on_reply, &s->replies[i], NULL);
                if (r < 0)
                        return bus_call_failed(NULL, r, call_names[i]);
        }

        for (;;) {
                bool pending = false;

                for (size_t i = 0; i < _CALL_MAX; i++)
                        if ((want & (1u << i)) && !s->replies[i])
                                pending = true;
                if (!pending)
                        break;
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return bus_call_failed(NULL, r, "the query");
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0)
                        return bus_call_failed(NULL, r, "the query");
        }

        for (size_t i = 0; i < _CALL_MAX; i++) {
                sd_bus_message *m = s->replies[i];
                if (i == CALL_PARTITIONS && m && sd_bus_message_is_method_error(m, SD_BUS_ERROR_UNKNOWN_METHOD))
                        continue; /* an edfd from before partitions: none */
                if (m && sd_bus_message_is_method_error(m, NULL))
                        return bus_call_failed(sd_bus_message_get_error(m), -sd_bus_message_get_errno(m),
                                               call_names[i]);
        }
        return EDFCTL_EXIT_OK;
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

/* One known key of an a{sv}: its name, its type, where it goes (an offset into a struct). */
typedef struct DictField {
        const char *name;
        char type;
        size_t offset;
} DictField;

/* Read an a{sv} into the struct at base: the keys of map with the type map gives are stored, every
 * other key (or type) is skipped, so that edfd can add keys without breaking this client. */
static int read_dict(sd_bus_message *m, const DictField *map, size_t n_map, void *base) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name, *contents;
                bool done = false;
                char type;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        return r;
                r = sd_bus_message_peek_type(m, &type, &contents);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n_map && !done; i++) {
                        char sig[2] = { map[i].type, '\0' };
                        if (strcmp(name, map[i].name) != 0 || strcmp(contents, sig) != 0)
                                continue;
                        r = sd_bus_message_read(m, "v", sig, (char *) base + map[i].offset);
                        if (r < 0)
                                return r;
                        done = true;
                }
                if (!done) {
                        r = sd_bus_message_skip(m, "v");
                        if (r < 0)
                                return r;
                }
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_group(sd_bus_message *m, GroupRow *g) {
        static const DictField extra[] = {
                { "min_split_runtime", 't', offsetof(GroupRow, min_split_runtime) },
                { "overridden", 'b', offsetof(GroupRow, overridden) },
        };
        int r;

        *g = (GroupRow) {};
        r = sd_bus_message_enter_container(m, 'r', EDFD_GROUP_ENTRY);
        if (r <= 0)
                return r;
        r = sd_bus_message_read(m, "sttttuusssb", &g->path, &g->runtime, &g->period, &g->bw, &g->allocated,
                                &g->n_reservations, &g->n_groups, &g->cgroup, &g->fork, &g->threads, &g->anyone);
        if (r >= 0)
                r = sd_bus_message_read_strv(m, &g->users);
        if (r >= 0)
                r = sd_bus_message_read(m, "b", &g->dynamic);
        if (r >= 0)
                r = read_dict(m, extra, ELEMENTSOF(extra), g);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r < 0) {
                g->users = strv_free(g->users);
                return r;
        }
        return 1;
}

static int parse_groups(Snapshot *s) {
        sd_bus_message *m = s->replies[CALL_GROUPS];
        GroupRow g = {};
        size_t allocated = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(" EDFD_GROUP_ENTRY ")");
        if (r < 0)
                return r;
        while ((r = read_group(m, &g)) > 0) {
                if (s->n_groups == allocated) {
                        size_t k = allocated ? allocated * 2 : 16;
                        GroupRow *n = reallocarray(s->groups, k, sizeof *n);
                        if (!n) {
                                strv_free(g.users);
                                return -ENOMEM;
                        }
                        s->groups = n;
                        allocated = k;
                }
                g.depth = path_depth(g.path);
                s->groups[s->n_groups++] = g;
        }
        if (r < 0)
                return r;
        if (s->n_groups > 0)
                qsort(s->groups, s->n_groups, sizeof *s->groups, group_row_compare);
        return sd_bus_message_exit_container(m);
}

static int read_reservation(sd_bus_message *m, ReservationRow *v) {
        static const DictField extra[] = {
                { "donated", 't', offsetof(ReservationRow, donated) },
                { "cpu", 'u', offsetof(ReservationRow, cpu) },
        };
        int r;

        *v = (ReservationRow) { .cpu = RESERVATION_GLOBAL };
        r = sd_bus_message_enter_container(m, 'r', EDFD_RESERVATION_ENTRY);
        if (r <= 0)
                return r;
        r = sd_bus_message_read(m, "tuusttttttu", &v->id, &v->pid, &v->tid, &v->group, &v->runtime, &v->deadline,
                                &v->period, &v->bw, &v->flags, &v->split_from, &v->uid);
        if (r >= 0)
                r = read_dict(m, extra, ELEMENTSOF(extra), v);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r < 0 ? r : 1;
}

static int parse_reservations(Snapshot *s) {
        sd_bus_message *m = s->replies[CALL_RESERVATIONS];
        ReservationRow v = {};
        size_t allocated = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(" EDFD_RESERVATION_ENTRY ")");
        if (r < 0)
                return r;
        while ((r = read_reservation(m, &v)) > 0) {
                if (s->n_reservations == allocated) {
                        size_t k = allocated ? allocated * 2 : 16;
                        ReservationRow *n = reallocarray(s->reservations, k, sizeof *n);
                        if (!n)
                                return -ENOMEM;
                        s->reservations = n;
                        allocated = k;
                }
                if (proc_thread_comm(v.pid, v.tid, v.comm) < 0)
                        v.comm[0] = '\0';
                s->reservations[s->n_reservations++] = v;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int parse_properties(Snapshot *s) {
        static const DictField map[] = {
                { "Version", 's', offsetof(Props, version) },
                { "Capacity", 't', offsetof(Props, capacity) },
                { "Allocated", 't', offsetof(Props, allocated) },
                { "Unmanaged", 't', offsetof(Props, unmanaged) },
                { "KernelCapacity", 't', offsetof(Props, kernel_capacity) },
                { "KernelAdmission", 'b', offsetof(Props, kernel_admission) },
                { "Overcommitted", 'b', offsetof(Props, overcommitted) },
                { "Reservations", 'u', offsetof(Props, n_reservations) },
                { "Groups", 'u', offsetof(Props, n_groups) },
                { "EventsSeen", 't', offsetof(Props, events_seen) },
                { "EventsLost", 't', offsetof(Props, events_lost) },
                { "Resyncs", 't', offsetof(Props, resyncs) },
                { "UnseenChildren", 't', offsetof(Props, unseen_children) },
        };

        s->props.version = "";
        return read_dict(s->replies[CALL_PROPERTIES], map, ELEMENTSOF(map), &s->props);
}

/* --- human output --- */

static const char *comm_or_dash(const ReservationRow *v) {
        return v->comm[0] ? v->comm : "-";
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
        return g->depth == 0 || !slash ? g->path : slash + 1;
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

static int parse_partitions(Snapshot *s) {
        sd_bus_message *m = s->replies[CALL_PARTITIONS];
        size_t allocated = 0;
        int r;

        if (sd_bus_message_is_method_error(m, NULL))
                return 0;
        r = sd_bus_message_read(m, "s", &s->placement_note);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "(" EDFD_PARTITION_ENTRY ")");
        if (r < 0)
                return r;
        for (;;) {
                PartitionRow v = {};
                r = sd_bus_message_enter_container(m, 'r', EDFD_PARTITION_ENTRY);
                if (r <= 0)
                        break;
                r = sd_bus_message_read(m, "suttu", &v.name, &v.cpu, &v.capacity, &v.allocated, &v.reservations);
                if (r >= 0)
                        r = sd_bus_message_skip(m, "a{sv}");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
                if (s->n_partitions == allocated) {
                        size_t k = allocated ? allocated * 2 : 8;
                        PartitionRow *n = reallocarray(s->partitions, k, sizeof *n);
                        if (!n)
                                return -ENOMEM;
                        s->partitions = n;
                        allocated = k;
                }
                s->partitions[s->n_partitions++] = v;
        }
        if (r < 0)
                return r;
        s->have_partitions = true;
        return sd_bus_message_exit_container(m);
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
                               i == 0 ? "  Partitions: " : "              ", v->name, v->cpu, bw_format(v->capacity, a),
                               bw_format(v->allocated, b), bw_display_free(v->capacity, v->allocated, c),
                               v->reservations, v->reservations == 1 ? "" : "s");
                }
        }
        if (note)
                print_wrapped("        Note", s->placement_note);
}

static int status_print(const Snapshot *s) {
        _cleanup_(table_freep) Table *groups = NULL, *res = NULL;
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX];
        const Props *p = &s->props;
        int r = 0;

        printf("     Version: %s\n", p->version);
        printf("    Capacity: %s (kernel %s, kernel admission %s)\n", bw_format(p->capacity, a),
               bw_format(p->kernel_capacity, b), p->kernel_admission ? "on" : "off");
        printf("   Allocated: %s (unmanaged deadline threads %s)\n", bw_format(p->allocated, a),
               bw_format(p->unmanaged, b));
        printf("        Free: %s\n", bw_display_free(p->capacity, p->allocated, c));
        printf("Reservations: %zu in %zu group%s\n", s->n_reservations, s->n_groups, s->n_groups == 1 ? "" : "s");
        printf("      Events: %" PRIu64 " seen, %" PRIu64 " lost, %" PRIu64 " resyncs, %" PRIu64
               " unseen children\n", p->events_seen, p->events_lost, p->resyncs, p->unseen_children);
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
                        }
        }
        /* Reservations in a group the list did not show (a group removed between the calls). */
        for (size_t j = 0; j < s->n_reservations; j++) {
                bool found = false;
                for (size_t i = 0; i < s->n_groups && !found; i++)
                        found = strcmp(s->reservations[j].group, s->groups[i].path) == 0;
                if (!found) {
                        printf("  (in %s) ", s->reservations[j].group);
                        table_print_row(res, j, stdout);
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
        for (size_t i = 0; i < 12; i++)
                if (i != 1 && i != 4 && i != 9)
                        table_align_right(t, i);
        for (size_t i = 0; i < s->n_reservations; i++) {
                const ReservationRow *v = &s->reservations[i];
                r = r ?: table_add(t, "%" PRIu64, v->id);
                r = r ?: table_add(t, "%s", v->group);
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
        for (char **u = g->users; u && *u; u++)
                if (json_object_array_add(a, json_object_new_string(*u)) < 0) {
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
        JSON_ADD(o, "group", json_object_new_string(v->group), r);
        JSON_ADD(o, "pid", json_object_new_uint64(v->pid), r);
        JSON_ADD(o, "tid", json_object_new_uint64(v->tid), r);
        JSON_ADD(o, "comm", v->comm[0] ? json_object_new_string(v->comm) : NULL, r);
        JSON_ADD(o, "runtime", json_object_new_uint64(v->runtime), r);
        JSON_ADD(o, "deadline", json_object_new_uint64(v->deadline), r);
        JSON_ADD(o, "period", json_object_new_uint64(v->period), r);
        JSON_ADD(o, "bandwidth", json_bw(v->bw), r);
        JSON_ADD(o, "flags", json_object_new_uint64(v->flags), r);
        JSON_ADD(o, "flag_names", fl, r);
        JSON_ADD(o, "split_from", v->split_from ? json_object_new_uint64(v->split_from) : NULL, r);
        JSON_ADD(o, "donated", v->split_from ? json_object_new_uint64(v->donated) : NULL, r);
        JSON_ADD(o, "cpu", v->cpu != RESERVATION_GLOBAL ? json_object_new_uint64(v->cpu) : NULL, r);
        JSON_ADD(o, "uid", json_object_new_uint64(v->uid), r);
        if (r < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static json_object *json_group(const GroupRow *g) {
        json_object *o = json_object_new_object(), *users = NULL;
        int r = 0;

        if (!o)
                return NULL;
        r = json_users(g, &users);
        JSON_ADD(o, "path", json_object_new_string(g->path), r);
        JSON_ADD(o, "depth", json_object_new_uint64(g->depth), r);
        JSON_ADD(o, "runtime", json_object_new_uint64(g->runtime), r);
        JSON_ADD(o, "period", json_object_new_uint64(g->period), r);
        JSON_ADD(o, "bandwidth", json_bw(g->bw), r);
        JSON_ADD(o, "allocated", json_bw(g->allocated), r);
        JSON_ADD(o, "free", g->bw == UINT64_MAX ? NULL :
                 json_object_new_double(((double) g->bw - (double) g->allocated) / (double) BW_UNIT), r);
        JSON_ADD(o, "reservations", json_object_new_uint64(g->n_reservations), r);
        JSON_ADD(o, "groups", json_object_new_uint64(g->n_groups), r);
        JSON_ADD(o, "cgroup", g->cgroup[0] ? json_object_new_string(g->cgroup) : NULL, r);
        JSON_ADD(o, "fork", json_object_new_string(g->fork), r);
        JSON_ADD(o, "threads", json_object_new_string(g->threads), r);
        JSON_ADD(o, "users", users, r);
        JSON_ADD(o, "dynamic", json_object_new_boolean(g->dynamic), r);
        JSON_ADD(o, "overridden", json_object_new_boolean(g->overridden), r);
        JSON_ADD(o, "min_split_runtime", json_object_new_uint64(g->min_split_runtime), r);
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
                json_object *g = json_group(&s->groups[i]);
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

        JSON_ADD(o, "version", json_object_new_string(p->version), r);
        JSON_ADD(o, "capacity", json_bw(p->capacity), r);
        JSON_ADD(o, "kernel_capacity", json_bw(p->kernel_capacity), r);
        JSON_ADD(o, "kernel_admission", json_object_new_boolean(p->kernel_admission), r);
        JSON_ADD(o, "allocated", json_bw(p->allocated), r);
        JSON_ADD(o, "unmanaged", json_bw(p->unmanaged), r);
        JSON_ADD(o, "free", p->capacity == UINT64_MAX ? NULL :
                 json_object_new_double(((double) p->capacity - (double) p->allocated) / (double) BW_UNIT), r);
        JSON_ADD(o, "overcommitted", json_object_new_boolean(p->overcommitted), r);
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
                        JSON_ADD(e, "name", json_object_new_string(v->name), r);
                        JSON_ADD(e, "cpu", json_object_new_uint64(v->cpu), r);
                        JSON_ADD(e, "capacity", json_bw(v->capacity), r);
                        JSON_ADD(e, "allocated", json_bw(v->allocated), r);
                        JSON_ADD(e, "reservations", json_object_new_uint64(v->reservations), r);
                }
                JSON_ADD(o, "placement", json_object_new_string(s->n_partitions ? "partitioned" : "global"), r);
                JSON_ADD(o, "placement_note", json_object_new_string(s->placement_note ?: ""), r);
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
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        Snapshot s = {};
        json_object *o = NULL;
        int r, ex;

        ex = bus_connect(&bus);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        ex = snapshot_fetch(bus, &s, want);
        if (ex != EDFCTL_EXIT_OK)
                goto finish;

        for (size_t i = 0; i < _CALL_MAX; i++) {
                if (!s.replies[i])
                        continue;
                r = i == CALL_GROUPS         ? parse_groups(&s)
                    : i == CALL_RESERVATIONS ? parse_reservations(&s)
                    : i == CALL_PARTITIONS   ? parse_partitions(&s)
                                             : parse_properties(&s);
                if (r < 0) {
                        ex = bus_parse_failed(r, call_names[i]);
                        goto finish;
                }
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
        return snapshot_run(a, (1u << CALL_GROUPS) | (1u << CALL_RESERVATIONS) | (1u << CALL_PROPERTIES) |
                                       (1u << CALL_PARTITIONS), true);
}

int verb_list(const Args *a) {
        return snapshot_run(a, 1u << CALL_RESERVATIONS, false);
}
