/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libedfd: a snapshot of what edfd holds. The calls a snapshot needs (ListReservations, ListGroups,
 * the properties' GetAll, ListPartitions) are sent at once and their replies collected afterwards:
 * one round trip instead of four. The replies stay referenced by the snapshot, and the strings the
 * accessors return point into them, so a snapshot is one allocation per row kind plus the replies.
 * The fields edfd sends in an entry's trailing a{sv} are read by name; keys this library does not
 * know are skipped, so a newer edfd does not break an older application. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "edfd/libedfd-internal.h"
#include "shared/protocol.h"

enum {
        CALL_RESERVATIONS,
        CALL_GROUPS,
        CALL_STATUS,
        CALL_PARTITIONS,
        _CALL_MAX,
};

static const char *const call_names[_CALL_MAX] = {
        [CALL_RESERVATIONS] = "ListReservations",
        [CALL_GROUPS] = "ListGroups",
        [CALL_STATUS] = "GetAll",
        [CALL_PARTITIONS] = "ListPartitions",
};

struct edfd_reservation {
        uint64_t id;
        uint32_t pid, tid;
        const char *group;
        uint64_t runtime, deadline, period, bw, flags, split_from, donated;
        uint32_t uid, cpu;
        int has_cpu;
        uint64_t throttles;        /* UINT64_MAX: not counted (edfd does not, or is older) */
        uint64_t lock_waits;       /* UINT64_MAX: not counted (edfd does not, or is older) */
};

struct edfd_group {
        const char *path;
        uint64_t runtime, period, bw, allocated;
        uint32_t n_reservations, n_groups;
        const char *cgroup, *fork, *threads;
        int anyone;
        char **users;
        int dynamic, overridden;
        uint64_t min_split_runtime;
        int reclaim;                 /* -1: edfd did not say (older than reclaim) */
        const char *placement;       /* NULL: edfd did not say */
};

struct edfd_partition {
        const char *name;
        uint32_t cpu, n_reservations;
        uint64_t capacity, allocated;
};

typedef struct Status {
        const char *version;
        uint64_t capacity, allocated, unmanaged, kernel_capacity;
        int kernel_admission, overcommitted;
        uint32_t n_reservations, n_groups;
        uint64_t events_seen, events_lost, resyncs, unseen_children;
        uint32_t waiting_at_start;
        const char *throttle_counting;
        const char *lock_wait_counting;
} Status;

struct edfd_snapshot {
        sd_bus_message *replies[_CALL_MAX];
        edfd_reservation *reservations;
        size_t n_reservations;
        edfd_group *groups;
        size_t n_groups;
        edfd_partition *partitions;
        size_t n_partitions;
        int has_partitions;
        const char *placement_note;
        Status status;
};

edfd_snapshot *edfd_snapshot_free(edfd_snapshot *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < _CALL_MAX; i++)
                sd_bus_message_unref(s->replies[i]);
        for (size_t i = 0; i < s->n_groups; i++) {
                for (char **u = s->groups[i].users; u && *u; u++)
                        free(*u);
                free(s->groups[i].users);
        }
        free(s->reservations);
        free(s->groups);
        free(s->partitions);
        free(s);
        return NULL;
}

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        sd_bus_message **slot = userdata;

        *slot = sd_bus_message_ref(m);
        return 1;
}

/* Make room for one more of an array of n elements of size bytes. */
static void *grow(void *array, size_t n, size_t size, size_t *allocated) {
        void *p;
        size_t k;

        if (n < *allocated)
                return array;
        k = *allocated ? *allocated * 2 : 16;
        p = reallocarray(array, k, size);
        if (p)
                *allocated = k;
        return p;
}

static int parse_reservations(edfd_snapshot *s, sd_bus_message *m) {
        static const edfd_dict_field extra[] = {
                { "donated", 't', offsetof(edfd_reservation, donated) },
                { "cpu", 'u', offsetof(edfd_reservation, cpu) },
                { "throttles", 't', offsetof(edfd_reservation, throttles) },
                { "lock_waits", 't', offsetof(edfd_reservation, lock_waits) },
        };
        size_t allocated = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(" EDFD_RESERVATION_ENTRY ")");
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        while ((r = sd_bus_message_enter_container(m, 'r', EDFD_RESERVATION_ENTRY)) > 0) {
                edfd_reservation v = { .cpu = UINT32_MAX, .throttles = UINT64_MAX, .lock_waits = UINT64_MAX }, *n;
                r = sd_bus_message_read(m, "tuusttttttu", &v.id, &v.pid, &v.tid, &v.group, &v.runtime, &v.deadline,
                                        &v.period, &v.bw, &v.flags, &v.split_from, &v.uid);
                if (r >= 0)
                        r = edfd_read_dict(m, extra, sizeof extra / sizeof extra[0], &v);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
                v.has_cpu = v.cpu != UINT32_MAX;
                n = grow(s->reservations, s->n_reservations, sizeof *n, &allocated);
                if (!n)
                        return -ENOMEM;
                s->reservations = n;
                s->reservations[s->n_reservations++] = v;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int parse_groups(edfd_snapshot *s, sd_bus_message *m) {
        static const edfd_dict_field extra[] = {
                { "min_split_runtime", 't', offsetof(edfd_group, min_split_runtime) },
                { "overridden", 'b', offsetof(edfd_group, overridden) },
                { "reclaim", 'b', offsetof(edfd_group, reclaim) },
                { "placement", 's', offsetof(edfd_group, placement) },
        };
        size_t allocated = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(" EDFD_GROUP_ENTRY ")");
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        while ((r = sd_bus_message_enter_container(m, 'r', EDFD_GROUP_ENTRY)) > 0) {
                edfd_group g = { .reclaim = -1 }, *n;
                r = sd_bus_message_read(m, "sttttuusssb", &g.path, &g.runtime, &g.period, &g.bw, &g.allocated,
                                        &g.n_reservations, &g.n_groups, &g.cgroup, &g.fork, &g.threads, &g.anyone);
                if (r >= 0)
                        r = sd_bus_message_read_strv(m, &g.users);
                if (r >= 0)
                        r = sd_bus_message_read(m, "b", &g.dynamic);
                if (r >= 0)
                        r = edfd_read_dict(m, extra, sizeof extra / sizeof extra[0], &g);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                n = r < 0 ? NULL : grow(s->groups, s->n_groups, sizeof *n, &allocated);
                if (!n) {
                        for (char **u = g.users; u && *u; u++)
                                free(*u);
                        free(g.users);
                        return r < 0 ? r : -ENOMEM;
                }
                s->groups = n;
                s->groups[s->n_groups++] = g;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int parse_partitions(edfd_snapshot *s, sd_bus_message *m) {
        size_t allocated = 0;
        int r;

        r = sd_bus_message_read(m, "s", &s->placement_note);
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        r = sd_bus_message_enter_container(m, 'a', "(" EDFD_PARTITION_ENTRY ")");
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        while ((r = sd_bus_message_enter_container(m, 'r', EDFD_PARTITION_ENTRY)) > 0) {
                edfd_partition v = {}, *n;
                r = sd_bus_message_read(m, "suttu", &v.name, &v.cpu, &v.capacity, &v.allocated, &v.n_reservations);
                if (r >= 0)
                        r = edfd_read_dict(m, NULL, 0, &v);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
                n = grow(s->partitions, s->n_partitions, sizeof *n, &allocated);
                if (!n)
                        return -ENOMEM;
                s->partitions = n;
                s->partitions[s->n_partitions++] = v;
        }
        if (r < 0)
                return r;
        s->has_partitions = 1;
        return sd_bus_message_exit_container(m);
}

static int parse_status(edfd_snapshot *s, sd_bus_message *m) {
        static const edfd_dict_field map[] = {
                { "Version", 's', offsetof(Status, version) },
                { "Capacity", 't', offsetof(Status, capacity) },
                { "Allocated", 't', offsetof(Status, allocated) },
                { "Unmanaged", 't', offsetof(Status, unmanaged) },
                { "KernelCapacity", 't', offsetof(Status, kernel_capacity) },
                { "KernelAdmission", 'b', offsetof(Status, kernel_admission) },
                { "Overcommitted", 'b', offsetof(Status, overcommitted) },
                { "Reservations", 'u', offsetof(Status, n_reservations) },
                { "Groups", 'u', offsetof(Status, n_groups) },
                { "EventsSeen", 't', offsetof(Status, events_seen) },
                { "EventsLost", 't', offsetof(Status, events_lost) },
                { "Resyncs", 't', offsetof(Status, resyncs) },
                { "UnseenChildren", 't', offsetof(Status, unseen_children) },
                { "WaitingAtStart", 'u', offsetof(Status, waiting_at_start) },
                { "ThrottleCounting", 's', offsetof(Status, throttle_counting) },
                { "LockWaitCounting", 's', offsetof(Status, lock_wait_counting) },
        };

        return edfd_read_dict(m, map, sizeof map / sizeof map[0], &s->status);
}

/* Send the calls in what at once, then wait for all their replies. */
static int fetch(edfd *e, edfd_snapshot *s, unsigned what) {
        int r;

        for (size_t i = 0; i < _CALL_MAX; i++) {
                if (!(what & (1u << i)))
                        continue;
                if (i == CALL_STATUS)
                        r = sd_bus_call_method_async(e->bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH,
                                                     "org.freedesktop.DBus.Properties", "GetAll", on_reply,
                                                     &s->replies[i], "s", EDFD_BUS_INTERFACE);
                else
                        r = sd_bus_call_method_async(e->bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                                     call_names[i], on_reply, &s->replies[i], NULL);
                if (r < 0)
                        return edfd_fail_bus(e, NULL, r, call_names[i]);
        }
        for (;;) {
                bool pending = false;

                for (size_t i = 0; i < _CALL_MAX; i++)
                        if ((what & (1u << i)) && !s->replies[i])
                                pending = true;
                if (!pending)
                        break;
                r = sd_bus_process(e->bus, NULL);
                if (r < 0)
                        return edfd_fail_bus(e, NULL, r, "the snapshot");
                if (r > 0)
                        continue;
                r = sd_bus_wait(e->bus, UINT64_MAX);
                if (r < 0 && r != -EINTR)
                        return edfd_fail_bus(e, NULL, r, "the snapshot");
        }
        for (size_t i = 0; i < _CALL_MAX; i++) {
                sd_bus_message *m = s->replies[i];
                if (!m)
                        continue;
                if (i == CALL_PARTITIONS && sd_bus_message_is_method_error(m, SD_BUS_ERROR_UNKNOWN_METHOD))
                        continue; /* an edfd from before partitions: none */
                if (sd_bus_message_is_method_error(m, NULL))
                        return edfd_fail_reply(e, m, call_names[i]);
        }
        for (size_t i = 0; i < _CALL_MAX; i++) {
                sd_bus_message *m = s->replies[i];
                if (!m || sd_bus_message_is_method_error(m, NULL))
                        continue;
                r = i == CALL_RESERVATIONS ? parse_reservations(s, m)
                    : i == CALL_GROUPS     ? parse_groups(s, m)
                    : i == CALL_STATUS     ? parse_status(s, m)
                                           : parse_partitions(s, m);
                if (r < 0)
                        return r == -ENOMEM ? edfd_fail(e, r, "out of memory for the snapshot")
                                            : edfd_fail_parse(e, r, call_names[i]);
        }
        return 0;
}

int edfd_snapshot_fetch(edfd *e, unsigned what, edfd_snapshot **ret) {
        edfd_snapshot *s;
        int r;

        r = edfd_begin(e);
        if (r < 0)
                return r;
        if (!ret)
                return edfd_fail(e, -EINVAL, "edfd_snapshot_fetch: no place for the snapshot (NULL)");
        if (what == 0 || (what & ~EDFD_SNAPSHOT_ALL))
                return edfd_fail(e, -EINVAL, "edfd_snapshot_fetch: what is 0x%x; give EDFD_SNAPSHOT_* bits", what);
        s = calloc(1, sizeof *s);
        if (!s)
                return edfd_fail(e, -ENOMEM, "out of memory for the snapshot");
        s->status.version = "";
        s->status.throttle_counting = "";
        s->status.lock_wait_counting = "";
        s->placement_note = "";
        r = fetch(e, s, what);
        if (r < 0) {
                edfd_snapshot_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

/* --- accessors --- */

#define INDEX(s, what, i) (s && i < s->n_##what ? &s->what[i] : NULL)

size_t edfd_snapshot_n_reservations(const edfd_snapshot *s) {
        return s ? s->n_reservations : 0;
}
const edfd_reservation *edfd_snapshot_reservation(const edfd_snapshot *s, size_t i) {
        return INDEX(s, reservations, i);
}
size_t edfd_snapshot_n_groups(const edfd_snapshot *s) {
        return s ? s->n_groups : 0;
}
const edfd_group *edfd_snapshot_group(const edfd_snapshot *s, size_t i) {
        return INDEX(s, groups, i);
}
size_t edfd_snapshot_n_partitions(const edfd_snapshot *s) {
        return s ? s->n_partitions : 0;
}
const edfd_partition *edfd_snapshot_partition(const edfd_snapshot *s, size_t i) {
        return INDEX(s, partitions, i);
}
int edfd_snapshot_has_partitions(const edfd_snapshot *s) {
        return s ? s->has_partitions : 0;
}
const char *edfd_snapshot_placement_note(const edfd_snapshot *s) {
        return s ? s->placement_note : "";
}

/* One accessor per field: the value, or zero for NULL. */
#define GETTER(type, object, field, member, zero)                 \
        type edfd_##object##_##field(const edfd_##object *o) {   \
                return o ? (type) o->member : zero;               \
        }

GETTER(uint64_t, reservation, id, id, 0)
GETTER(pid_t, reservation, pid, pid, 0)
GETTER(pid_t, reservation, tid, tid, 0)
GETTER(const char *, reservation, group, group, "")
GETTER(uint64_t, reservation, runtime, runtime, 0)
GETTER(uint64_t, reservation, deadline, deadline, 0)
GETTER(uint64_t, reservation, period, period, 0)
GETTER(uint64_t, reservation, bandwidth, bw, 0)
GETTER(uint64_t, reservation, flags, flags, 0)
GETTER(uint64_t, reservation, split_from, split_from, 0)
GETTER(uint64_t, reservation, donated, donated, 0)
GETTER(uid_t, reservation, uid, uid, 0)
int edfd_reservation_cpu(const edfd_reservation *v) {
        return v && v->has_cpu && v->cpu <= INT32_MAX ? (int) v->cpu : -1;
}
int64_t edfd_reservation_throttles(const edfd_reservation *v) {
        return v && v->throttles <= INT64_MAX ? (int64_t) v->throttles : -1;
}
int64_t edfd_reservation_lock_waits(const edfd_reservation *v) {
        return v && v->lock_waits <= INT64_MAX ? (int64_t) v->lock_waits : -1;
}

GETTER(const char *, group, path, path, "")
GETTER(uint64_t, group, runtime, runtime, 0)
GETTER(uint64_t, group, period, period, 0)
GETTER(uint64_t, group, bandwidth, bw, 0)
GETTER(uint64_t, group, allocated, allocated, 0)
GETTER(unsigned, group, n_reservations, n_reservations, 0)
GETTER(unsigned, group, n_groups, n_groups, 0)
GETTER(const char *, group, cgroup, cgroup, "")
GETTER(const char *, group, fork, fork, "")
GETTER(const char *, group, threads, threads, "")
GETTER(int, group, anyone, anyone, 0)
GETTER(int, group, dynamic, dynamic, 0)
GETTER(int, group, overridden, overridden, 0)
GETTER(uint64_t, group, min_split_runtime, min_split_runtime, 0)
GETTER(int, group, reclaim, reclaim, -1)
const char *edfd_group_placement(const edfd_group *g) {
        return g && g->placement ? g->placement : "";
}
const char *const *edfd_group_users(const edfd_group *g) {
        static const char *const none[] = { NULL };
        return g && g->users ? (const char *const *) g->users : none;
}

GETTER(const char *, partition, name, name, "")
GETTER(unsigned, partition, cpu, cpu, 0)
GETTER(uint64_t, partition, capacity, capacity, 0)
GETTER(uint64_t, partition, allocated, allocated, 0)
GETTER(unsigned, partition, n_reservations, n_reservations, 0)

#define STATUS_GETTER(type, field, zero)                          \
        type edfd_status_##field(const edfd_snapshot *s) {       \
                return s ? (type) s->status.field : zero;         \
        }

STATUS_GETTER(const char *, version, "")
STATUS_GETTER(uint64_t, capacity, 0)
STATUS_GETTER(uint64_t, allocated, 0)
STATUS_GETTER(uint64_t, unmanaged, 0)
STATUS_GETTER(uint64_t, kernel_capacity, 0)
STATUS_GETTER(int, kernel_admission, 0)
STATUS_GETTER(int, overcommitted, 0)
STATUS_GETTER(unsigned, n_reservations, 0)
STATUS_GETTER(unsigned, n_groups, 0)
STATUS_GETTER(uint64_t, events_seen, 0)
STATUS_GETTER(uint64_t, events_lost, 0)
STATUS_GETTER(uint64_t, resyncs, 0)
STATUS_GETTER(uint64_t, unseen_children, 0)
STATUS_GETTER(unsigned, waiting_at_start, 0)
STATUS_GETTER(const char *, throttle_counting, "")
STATUS_GETTER(const char *, lock_wait_counting, "")
