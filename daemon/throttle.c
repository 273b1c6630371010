/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The throttle and lock-wait counters' adapter: loads throttle.bpf.c through its libbpf skeleton
 * (generated at build time by bpftool gen skeleton), keeps the map's entries to the threads edfd
 * manages, reads them. See throttle.h. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "caps.h"
#include "config.h"
#include "basic/hashmap.h"
#include "basic/macro.h"
#include "core/throttle.h"
#include "log.h"
#include "throttle-counts.h"
#include "throttle.h"

#if HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "throttle.skel.h"
#endif

struct Throttles {
#if HAVE_BPF
        struct throttle_bpf *skel; /* NULL: counting is off */
#endif
        int map_fd;                /* -1: off */
        bool counting;             /* the program's flag is on: only while some thread is counted */
        char reason[256];          /* "on", or why not */
        char lock_reason[256];     /* lock waits: "on", or why not */
        Hashmap seen;              /* tid -> ThrottleCounts *: the counts the last poll saw */
};

#if HAVE_BPF
/* libbpf's own messages (the verifier's log on a refusal) go to the debug log, not to stderr. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap) {
        char line[512];
        size_t n;

        if (level == LIBBPF_DEBUG)
                return 0;
        vsnprintf(line, sizeof line, fmt, ap);
        n = strlen(line);
        if (n > 0 && line[n - 1] == '\n')
                line[n - 1] = '\0';
        log_debug("libbpf: %s", line);
        return 0;
}

/* Open and load the object; lock_waits false: without the wakeup program. */
static int open_load(Throttles *t, bool lock_waits, struct throttle_bpf **ret) {
        struct throttle_bpf *s;
        int r;

        s = throttle_bpf__open();
        if (!s) {
                r = errno ? errno : EINVAL;
                throttle_reason(THROTTLE_STEP_OPEN, r, t->reason, sizeof t->reason);
                return -r;
        }
#ifdef EDFD_LOCK_WAITS
        if (!lock_waits)
                (void) bpf_program__set_autoload(s->progs.edfd_on_waking, false);
#endif
        r = throttle_bpf__load(s);
        if (r < 0) {
                throttle_reason(THROTTLE_STEP_LOAD, -r, t->reason, sizeof t->reason);
                throttle_bpf__destroy(s);
                return r;
        }
        *ret = s;
        return 0;
}

static int load(Throttles *t, bool lock_waits) {
        struct throttle_bpf *s = NULL;
        int r;

        libbpf_set_print(libbpf_log);
        if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
                r = errno;
                throttle_reason(THROTTLE_STEP_BTF, r, t->reason, sizeof t->reason);
                snprintf(t->lock_reason, sizeof t->lock_reason, "%s", t->reason);
                return -r;
        }
#ifdef EDFD_LOCK_WAITS
        if (!lock_waits) {
                snprintf(t->lock_reason, sizeof t->lock_reason, "turned off");
                r = open_load(t, false, &s);
        } else if ((r = open_load(t, true, &s)) >= 0)
                snprintf(t->lock_reason, sizeof t->lock_reason, "on");
        else {
                /* The wakeup program needs more of the kernel (bpf_task_pt_regs(): Linux 5.15) than the
                 * switch program: count throttles without it. */
                char why[256];

                throttle_reason(THROTTLE_STEP_LOAD, -r, why, sizeof why);
                snprintf(t->lock_reason, sizeof t->lock_reason, "%.200s (lock waits need Linux 5.15 or later)", why);
                r = open_load(t, false, &s);
        }
#else
        snprintf(t->lock_reason, sizeof t->lock_reason, "not on this architecture (x86-64 and arm64 only)");
        r = open_load(t, false, &s);
#endif
        if (r < 0) {
                snprintf(t->lock_reason, sizeof t->lock_reason, "%s", t->reason);
                return r;
        }
        /* Attached for edfd's life (CAP_BPF and CAP_PERFMON are needed for this and no more:
         * throttles_seal()), its flag off until a thread is counted. */
        if (!s->bss) {
                throttle_reason(THROTTLE_STEP_LOAD, ENOTSUP, t->reason, sizeof t->reason);
                snprintf(t->lock_reason, sizeof t->lock_reason, "%s", t->reason);
                throttle_bpf__destroy(s);
                return -ENOTSUP;
        }
        s->bss->counting = 0;
        r = throttle_bpf__attach(s);
        if (r < 0) {
                throttle_reason(THROTTLE_STEP_ATTACH, -r, t->reason, sizeof t->reason);
                snprintf(t->lock_reason, sizeof t->lock_reason, "%s", t->reason);
                throttle_bpf__destroy(s);
                return r;
        }
        t->skel = s;
        t->map_fd = bpf_map__fd(s->maps.counts);
        snprintf(t->reason, sizeof t->reason, "on");
        return 0;
}
#endif

int throttles_new(Throttles **ret, const char *disabled, bool lock_waits) {
        Throttles *t = calloc(1, sizeof *t);

        if (!t)
                return -ENOMEM;
        t->map_fd = -1;
        if (disabled)
                snprintf(t->reason, sizeof t->reason, "%s", disabled);
        else {
#if HAVE_BPF
                (void) load(t, lock_waits);
#else
                snprintf(t->reason, sizeof t->reason, "edfd was built without BPF support (libbpf, clang, bpftool)");
#endif
        }
        if (!t->lock_reason[0])
                snprintf(t->lock_reason, sizeof t->lock_reason, "%s", t->reason);
        *ret = t;
        return 0;
}

Throttles *throttles_free(Throttles *t) {
        if (!t)
                return NULL;
#if HAVE_BPF
        throttle_bpf__destroy(t->skel);
#endif
        hashmap_done_free(&t->seen, free);
        free(t);
        return NULL;
}

bool throttles_on(const Throttles *t) {
        return t && t->map_fd >= 0;
}

const char *throttles_state(const Throttles *t) {
        return t ? t->reason : "not started";
}

const char *throttles_lock_state(const Throttles *t) {
        return t ? t->lock_reason : "not started";
}

size_t throttles_tracked(const Throttles *t) {
        return t ? t->seen.n_items : 0;
}

bool throttles_counting(const Throttles *t) {
        return t && t->counting;
}

int throttles_seal(Throttles *t, char *note, size_t size) {
        const uint64_t mask = CAPS_BIT(CAPS_BPF) | CAPS_BIT(CAPS_PERFMON);
        int r;

        note[0] = '\0';
        r = caps_drop(mask, true);
        if (r < 0) {
                snprintf(note, size, "cannot take CAP_BPF and CAP_PERFMON out of the effective set: %s", strerror(-r));
                return r;
        }
#if HAVE_BPF
        if (throttles_on(t)) {
                uint32_t none = 0; /* never a counted thread */
                struct edfd_counts v;

                r = bpf_map_lookup_elem(t->map_fd, &none, &v) < 0 ? -errno : 0;
                if (r != -ENOENT) {
                        (void) caps_raise(mask);
                        snprintf(note, size, "CAP_BPF and CAP_PERFMON are kept: without them this kernel refuses "
                                 "the map's lookups (%s; kernel.unprivileged_bpf_disabled, before Linux 6.5)",
                                 r < 0 ? strerror(-r) : "an entry for thread 0");
                        return r < 0 ? r : -EPERM;
                }
        }
#endif
        r = caps_drop(mask, false);
        if (r < 0) {
                snprintf(note, size, "cannot drop CAP_BPF and CAP_PERFMON: %s", strerror(-r));
                return r;
        }
        r = caps_drop_bounding(mask);
        if (r < 0)
                snprintf(note, size, "CAP_BPF and CAP_PERFMON stay in the bounding set (%s: no CAP_SETPCAP); "
                         "no_new_privs keeps an exec from getting them back", strerror(-r));
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 && r < 0)
                snprintf(note, size, "CAP_BPF and CAP_PERFMON stay in the bounding set, and no_new_privs cannot be "
                         "set: %s", strerror(errno));
        return 0;
}

#if HAVE_BPF
int throttles_track(Throttles *t, uint32_t tid) {
        struct edfd_counts zero = { 0, 0 };
        ThrottleCounts *seen;
        int r;

        if (!throttles_on(t))
                return -EOPNOTSUPP;
        if (tid == 0)
                return -EINVAL;
        seen = hashmap_get(&t->seen, tid);
        if (!seen) {
                seen = malloc(sizeof *seen);
                if (!seen)
                        return -ENOMEM;
                r = hashmap_put(&t->seen, tid, seen);
                if (r < 0) {
                        free(seen);
                        return r;
                }
        }
        *seen = (ThrottleCounts) { 0, 0 };
        r = bpf_map_update_elem(t->map_fd, &tid, &zero, BPF_ANY);
        if (r < 0) {
                r = -errno;
                free(hashmap_remove(&t->seen, tid));
                return r == -E2BIG ? -ENOSPC : r;
        }
        if (!t->counting) {
                t->skel->bss->counting = 1;
                t->counting = true;
        }
        return 0;
}

void throttles_untrack(Throttles *t, uint32_t tid) {
        ThrottleCounts *seen;

        if (!throttles_on(t))
                return;
        seen = hashmap_remove(&t->seen, tid);
        if (!seen)
                return;
        free(seen);
        (void) bpf_map_delete_elem(t->map_fd, &tid);
        if (t->seen.n_items == 0 && t->counting) {
                t->skel->bss->counting = 0; /* nothing to count: one load and compare per context switch */
                t->counting = false;
        }
}

static int lookup(const Throttles *t, uint32_t tid, ThrottleCounts *ret) {
        struct edfd_counts v;

        if (bpf_map_lookup_elem(t->map_fd, &tid, &v) < 0)
                return -errno;
        *ret = (ThrottleCounts) { .throttles = v.throttles, .lock_waits = v.lock_waits };
        return 0;
}

int throttles_read(const Throttles *t, uint32_t tid, ThrottleCounts *ret) {
        if (!throttles_on(t))
                return -EOPNOTSUPP;
        if (!hashmap_get(&t->seen, tid))
                return -ENOENT;
        return lookup(t, tid, ret);
}

size_t throttles_poll(Throttles *t, ThrottlesGrew grew, void *userdata) {
        ThrottleCounts *seen, now;
        uint64_t tid;
        size_t n = 0;
        unsigned what;

        if (!throttles_on(t))
                return 0;
        HASHMAP_FOREACH_KEY(seen, tid, &t->seen, i) {
                uint32_t k = (uint32_t) tid;
                if (lookup(t, k, &now) < 0 || (what = throttle_counts_grew(seen, &now)) == 0)
                        continue;
                n++;
                grew(userdata, k, &now, what);
        }
        return n;
}
#else
int throttles_track(Throttles *t, uint32_t tid) {
        return -EOPNOTSUPP;
}
void throttles_untrack(Throttles *t, uint32_t tid) {
}
int throttles_read(const Throttles *t, uint32_t tid, ThrottleCounts *ret) {
        return -EOPNOTSUPP;
}
size_t throttles_poll(Throttles *t, ThrottlesGrew grew, void *userdata) {
        return 0;
}
#endif
