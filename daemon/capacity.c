/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "core/bandwidth.h"
#include "core/holders.h"
#include "capacity.h"
#include "log.h"
#include "basic/cpulist.h"
#include "basic/macro.h"
#include "basic/proc.h"
#include "sched-dl.h"

static int read_int64(const char *path, int64_t *ret) {
        FILE *f = fopen(path, "re");
        long long v;
        int n;

        if (!f)
                return -errno;
        n = fscanf(f, "%lld", &v);
        fclose(f);
        if (n != 1)
                return -EBADMSG;
        *ret = v;
        return 0;
}

/* The fair server exists since 6.12: 50 ms per 1 s per CPU by default. Known from debugfs where it
 * is mounted (its sched directory without a fair_server one: a kernel without), else from the version. */
static bool kernel_has_fair_server(void) {
        struct utsname u;
        unsigned major = 0, minor = 0;

        if (access("/sys/kernel/debug/sched/fair_server", F_OK) == 0)
                return true;
        if (access("/sys/kernel/debug/sched", F_OK) == 0)
                return false;
        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
                return false;
        return major > 6 || (major == 6 && minor >= 12);
}

/* What the fair servers of the online CPUs are set to take: each one's runtime / period from
 * debugfs (fair_server/cpuN), summed as the kernel's to_ratio() rounds each. The default of 50 ms per
 * 1 s on every CPU when a file cannot be read (root is refused them on some machines). */
static uint64_t fair_servers_set(unsigned ncpus) {
        char buf[CPU_LIST_MAX + 2], path[96];
        uint64_t one, total = 0, bw;
        size_t n;
        CpuMask online;

        (void) bw_of(50 * NSEC_PER_MSEC, NSEC_PER_SEC, &one);
        if (proc_read_file(AT_FDCWD, "/sys/devices/system/cpu/online", 0, buf, sizeof buf, &n) < 0 ||
            cpu_mask_parse(buf, n, &online, NULL) < 0 || cpu_mask_count(&online) != ncpus)
                return one * ncpus;
        for (unsigned cpu = 0; cpu < CPU_MASK_MAX; cpu++) {
                int64_t runtime, period;

                if (!cpu_mask_test(&online, cpu))
                        continue;
                snprintf(path, sizeof path, "/sys/kernel/debug/sched/fair_server/cpu%u/runtime", cpu);
                if (read_int64(path, &runtime) < 0 || runtime < 0)
                        return one * ncpus;
                snprintf(path, sizeof path, "/sys/kernel/debug/sched/fair_server/cpu%u/period", cpu);
                if (read_int64(path, &period) < 0 || period <= 0 ||
                    bw_of((uint64_t) runtime, (uint64_t) period, &bw) < 0 || __builtin_add_overflow(total, bw, &total))
                        return one * ncpus;
        }
        return total;
}

static int read_with(const KernelCapacity *prev, KernelCapacity *ret) {
        KernelCapacity c = {};
        int64_t rt_runtime, rt_period, pmin, pmax;
        long n;
        int r;

        if (prev) {
                rt_runtime = prev->rt_runtime_us;
                rt_period = (int64_t) prev->rt_period_us;
        } else {
                r = read_int64("/proc/sys/kernel/sched_rt_runtime_us", &rt_runtime);
                if (r < 0)
                        return r;
                r = read_int64("/proc/sys/kernel/sched_rt_period_us", &rt_period);
                if (r < 0)
                        return r;
        }
        if (rt_period <= 0)
                return -EBADMSG;
        c.limits = DL_LIMITS_DEFAULT;
        if (read_int64("/proc/sys/kernel/sched_deadline_period_min_us", &pmin) == 0 && pmin > 0)
                c.limits.period_min = (uint64_t) pmin * NSEC_PER_USEC;
        if (read_int64("/proc/sys/kernel/sched_deadline_period_max_us", &pmax) == 0 && pmax > 0)
                c.limits.period_max = (uint64_t) pmax * NSEC_PER_USEC;

        n = sysconf(_SC_NPROCESSORS_ONLN);
        c.ncpus = n > 0 ? (unsigned) n : 1;
        c.rt_runtime_us = rt_runtime;
        c.rt_period_us = (uint64_t) rt_period;
        c.admission_off = rt_runtime < 0;
        r = bw_kernel_capacity(c.ncpus, rt_runtime, (uint64_t) rt_period, &c.raw);
        if (r < 0)
                return r;
        if (kernel_has_fair_server())
                c.fair_server = fair_servers_set(c.ncpus);
        if (c.admission_off)
                c.usable = UINT64_MAX;
        else
                c.usable = c.raw > c.fair_server ? c.raw - c.fair_server : 0;
        *ret = c;
        return 0;
}

int capacity_read(KernelCapacity *ret) {
        return read_with(NULL, ret);
}

int capacity_read_reusing(const KernelCapacity *prev, KernelCapacity *ret) {
        return prev ? read_with(prev, ret) : -EINVAL;
}

typedef struct UnmanagedScan {
        const Tree *tree;
        uint64_t all;
        Holders holders;
} UnmanagedScan;

static int scan_thread(const ProcEntry *e, void *userdata) {
        UnmanagedScan *s = userdata;
        const Reservation *r;
        SchedInfo si;
        ProcStat st;
        Holder h;
        uint64_t bw;

        if (sched_get(e->tid, &si) < 0 || si.policy != SCHED_DEADLINE)
                return 0;
        /* An exited thread not yet reaped still reports its policy, but the kernel gave its
         * bandwidth back when it died: it holds nothing. */
        if (proc_entry_stat(e, PROC_STAT_STATE | PROC_STAT_COMM, &st) < 0 || st.state == 'Z' || st.state == 'X')
                return 0;
        if (bw_of(si.runtime, si.period, &bw) < 0)
                return 0;
        if (__builtin_add_overflow(s->all, bw, &s->all))
                s->all = UINT64_MAX;
        r = tree_find_thread(s->tree, (uint32_t) e->tid);
        if (r && sched_thread_is(e->pid, e->tid, r->identity) == 1)
                return 0;
        h = (Holder) { .pid = (uint32_t) e->pid, .tid = (uint32_t) e->tid, .bw = bw };
        snprintf(h.comm, sizeof h.comm, "%s", st.comm);
        holders_add(&s->holders, &h);
        return 0;
}

int capacity_scan_unmanaged(const Tree *t, Holders *ret, uint64_t *ret_all_bw) {
        UnmanagedScan s = { .tree = t };
        int r;

        r = proc_walk_all_threads(scan_thread, &s);
        if (r < 0)
                return r;
        *ret = s.holders;
        if (ret_all_bw)
                *ret_all_bw = s.all;
        return 0;
}

/* The value of key (".dl_bw->total_bw") on every CPU's line of /sys/kernel/debug/sched/debug:
 * magnitude and sign. Every CPU must show the same (-EDOM: several root domains). */
static int parse_field(const char *buf, size_t len, const char *key, bool *ret_negative, uint64_t *ret) {
        const char *p = buf, *end = buf + len;
        size_t klen = strlen(key);
        bool found = false, negative = false;
        uint64_t value = 0;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *eol = nl ? nl : end, *q = p;
                uint64_t v = 0;

                while (q < eol && (*q == ' ' || *q == '\t'))
                        q++;
                if ((size_t) (eol - q) >= klen && memcmp(q, key, klen) == 0 &&
                    (q + klen == eol || strchr(" \t:", q[klen]))) {
                        q += klen;
                        while (q < eol && (*q == ' ' || *q == '\t'))
                                q++;
                        if (q >= eol || *q != ':')
                                return -EBADMSG;
                        q++;
                        while (q < eol && (*q == ' ' || *q == '\t'))
                                q++;
                        /* The kernel prints its unsigned fields signed. */
                        bool neg = q < eol && *q == '-';
                        if (neg)
                                q++;
                        if (q >= eol || *q < '0' || *q > '9')
                                return -EBADMSG;
                        for (; q < eol && *q >= '0' && *q <= '9'; q++)
                                if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t) (*q - '0'), &v))
                                        return -EBADMSG;
                        while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
                                q++;
                        if (q != eol)
                                return -EBADMSG;
                        neg = neg && v != 0;
                        if (found && (v != value || neg != negative))
                                return -EDOM;
                        found = true;
                        value = v;
                        negative = neg;
                }
                p = eol + 1;
        }
        if (!found)
                return -ENODATA;
        *ret_negative = negative;
        *ret = value;
        return 0;
}

int capacity_parse_total_bw(const char *buf, size_t len, uint64_t *ret) {
        bool negative;
        uint64_t v;
        int r = parse_field(buf, len, ".dl_bw->total_bw", &negative, &v);

        if (r < 0)
                return r;
        if (negative)
                return -ERANGE; /* wrapped: the kernel refuses every admission until it recounts */
        *ret = v;
        return 0;
}

int capacity_parse_dl_bw(const char *buf, size_t len, int64_t *ret) {
        bool negative;
        uint64_t v;
        int r = parse_field(buf, len, ".dl_bw->bw", &negative, &v);

        if (r < 0)
                return r;
        if (negative ? v != 1 : v > (uint64_t) INT64_MAX)
                return -EBADMSG; /* -1 (admission off) is the only negative value */
        *ret = negative ? -1 : (int64_t) v;
        return 0;
}

/* The whole of /sys/kernel/debug/sched/debug into *ret (to be freed), its length in *ret_n. */
static int read_sched_debug(char **ret, size_t *ret_n) {
        /* A few hundred bytes per CPU; read it all (the file is generated at each read). */
        FILE *f = fopen("/sys/kernel/debug/sched/debug", "re");
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, n = 0;
        int r;

        if (!f)
                return -errno;
        for (;;) {
                size_t k;
                if (n == size) {
                        char *b;
                        if (size >= 64u << 20) {
                                fclose(f);
                                return -EFBIG;
                        }
                        size = size ? size * 2 : 65536;
                        b = realloc(buf, size);
                        if (!b) {
                                fclose(f);
                                return -ENOMEM;
                        }
                        buf = b;
                }
                k = fread(buf + n, 1, size - n, f);
                n += k;
                if (k == 0)
                        break;
        }
        r = ferror(f) ? -EIO : 0;
        fclose(f);
        if (r < 0)
                return r;
        *ret = buf;
        buf = NULL;
        *ret_n = n;
        return 0;
}

int capacity_read_total_bw(uint64_t *ret) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r = read_sched_debug(&buf, &n);

        return r < 0 ? r : capacity_parse_total_bw(buf, n, ret);
}

int capacity_read_dl_bw(int64_t *ret) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r = read_sched_debug(&buf, &n);

        return r < 0 ? r : capacity_parse_dl_bw(buf, n, ret);
}

/* --- the Capacity object --- */

/* See Capacity: past a 0-lag time by this much (also covers exit events not read yet), and read at
 * least this often. */
#define RECOUNT_SLACK_NSEC (100 * NSEC_PER_MSEC)
#define RT_REREAD_MAX_NSEC (300 * NSEC_PER_SEC)

struct Capacity {
        KernelCapacity kcap;
        Holders unmanaged;         /* the last scan's strangers: what they hold, how many, the largest */
        uint64_t scanned_ns;       /* when (CLOCK_MONOTONIC ns), 0 before the first */
        uint64_t fair_samples[3];  /* the fair servers' reserve as last measured, newest first */
        unsigned n_fair_samples;
        bool fair_reported;
        bool fair_uncounted_reported; /* the kernel's count lacks part of the servers' settings, said */
        bool count_negative;       /* debugfs shows the kernel's deadline count below zero */
        bool admission_off_reported;
        /* Reading sched_rt_{runtime,period}_us makes the kernel recount its deadline bandwidth,
         * which miscounts while an ended deadline task waits for its 0-lag time: the sysctls are read
         * again only once none of edfd's can be waiting (CLOCK_MONOTONIC ns), or after
         * RT_REREAD_MAX_NSEC regardless. */
        uint64_t recount_unsafe_until_ns, rt_read_ns;
        int64_t dl_bw_at_read;     /* debugfs's dl_bw->bw at that read, if dl_bw_known */
        bool dl_bw_known;

        sd_event *event;           /* not ours; NULL until capacity_attach_event() */
        sd_event_source *recount_timer;
        CapacityChanged changed;
        void *userdata;
};

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* capacity_read(), which has the kernel recount (see capacity.h); remembers when, and what debugfs
 * showed as dl_bw->bw then (read without side effects: while it shows the same, the sysctls have
 * not changed and need no reading). */
static int rt_read(Capacity *c, KernelCapacity *ret) {
        int r = capacity_read(ret);

        if (r < 0)
                return r;
        c->rt_read_ns = now_ns();
        c->dl_bw_known = capacity_read_dl_bw(&c->dl_bw_at_read) == 0;
        return 0;
}

int capacity_new(Capacity **ret) {
        Capacity *c = calloc(1, sizeof *c);
        int r;

        if (!c)
                return -ENOMEM;
        r = rt_read(c, &c->kcap);
        if (r < 0) {
                free(c);
                return r;
        }
        *ret = c;
        return 0;
}

Capacity *capacity_free(Capacity *c) {
        if (!c)
                return NULL;
        sd_event_source_disable_unref(c->recount_timer);
        free(c);
        return NULL;
}

void capacity_attach_event(Capacity *c, sd_event *e, CapacityChanged changed, void *userdata) {
        c->event = e;
        c->changed = changed;
        c->userdata = userdata;
}

const KernelCapacity *capacity_kernel(const Capacity *c) {
        return &c->kcap;
}

uint64_t capacity_unmanaged(const Capacity *c) {
        return c->unmanaged.total_bw;
}

unsigned capacity_unmanaged_threads(const Capacity *c) {
        return (unsigned) MIN(c->unmanaged.n, (size_t) UINT_MAX);
}

const Holders *capacity_unmanaged_holders(const Capacity *c) {
        return &c->unmanaged;
}

uint64_t capacity_scanned_ns(const Capacity *c) {
        return c->scanned_ns;
}

uint64_t capacity_ended_back_in(const Capacity *c) {
        uint64_t now = now_ns();

        return c->recount_unsafe_until_ns > now ? c->recount_unsafe_until_ns - now : 0;
}

bool capacity_count_negative(const Capacity *c) {
        return c->count_negative;
}

uint64_t capacity_root(const Capacity *c, bool cap_auto, uint64_t cap) {
        uint64_t usable = c->kcap.usable, capped;

        if (!cap_auto) {
                if (__builtin_add_overflow(cap, c->unmanaged.total_bw, &capped))
                        capped = UINT64_MAX;
                usable = MIN(usable, capped);
        }
        return usable;
}

/* Once none of edfd's ended deadline threads can be waiting for its 0-lag time: the capacity is
 * read, which has the kernel recount (see capacity.h), and so give back what it kept for children
 * raised after they had ended. Until then the timer only moves on. */
static int on_recount_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void recount_arm(Capacity *c) {
        int r;

        if (!c->event || c->recount_timer)
                return;
        r = sd_event_add_time(c->event, &c->recount_timer, CLOCK_MONOTONIC, c->recount_unsafe_until_ns / 1000, 0,
                              on_recount_timer, c);
        if (r < 0)
                log_debug("Cannot arm the timer to read the kernel's capacity later: %s", strerror(-r));
}

static int on_recount_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Capacity *c = userdata;
        KernelCapacity kc;

        (void) usec;
        c->recount_timer = sd_event_source_disable_unref(s);
        if (now_ns() < c->recount_unsafe_until_ns) {
                recount_arm(c);
                return 0;
        }
        /* Only the read: the rest of a capacity refresh (the scan for unmanaged threads) waits for
         * the periodic look, unless the sysctls changed meanwhile. */
        log_debug("No deadline thread of edfd's is ending: reading the capacity (the kernel recounts)");
        if (rt_read(c, &kc) < 0)
                return 0;
        if ((kc.rt_runtime_us != c->kcap.rt_runtime_us || kc.rt_period_us != c->kcap.rt_period_us) && c->changed)
                c->changed(c, c->userdata);
        return 0;
}

void capacity_recount_unsafe_for(Capacity *c, uint64_t period_ns) {
        uint64_t until;

        if (__builtin_add_overflow(now_ns(), period_ns, &until) ||
            __builtin_add_overflow(until, RECOUNT_SLACK_NSEC, &until))
                until = UINT64_MAX;
        c->recount_unsafe_until_ns = MAX(c->recount_unsafe_until_ns, until);
        recount_arm(c);
}

/* capacity_read(), or capacity_read_reusing() the sysctls read last while a recount would miscount;
 * then a timer reads them once it would not. */
static int kcap_read_raw(Capacity *c, KernelCapacity *ret) {
        uint64_t now = now_ns();
        int64_t dl_bw;

        /* Where debugfs shows dl_bw->bw unchanged, so are the sysctls: no recount at all. */
        if (c->rt_read_ns != 0 && c->dl_bw_known && capacity_read_dl_bw(&dl_bw) == 0 && dl_bw == c->dl_bw_at_read)
                return capacity_read_reusing(&c->kcap, ret);
        if (c->rt_read_ns == 0 || now >= c->recount_unsafe_until_ns || now - c->rt_read_ns >= RT_REREAD_MAX_NSEC) {
                /* (Has the kernel recount its deadline bandwidth: see capacity.h.) */
                log_debug("Reading sched_rt_runtime_us and sched_rt_period_us");
                return rt_read(c, ret);
        }
        recount_arm(c);
        return capacity_read_reusing(&c->kcap, ret);
}

/* capacity_read(), with the fair servers' reserve measured lately in place of what the servers are
 * set to take where the kernel counts more. Where it counts less (6.12 after a root-domain rebuild:
 * dl_bw->total_bw without the servers, VM test) the kernel admits more than the servers leave, and
 * the servers' settings stay the reserve: fair_server_uncounted says how much the count lacks. */
static int kcap_read(Capacity *c, KernelCapacity *ret) {
        KernelCapacity kc;
        uint64_t fair = UINT64_MAX;
        int r;

        r = kcap_read_raw(c, &kc);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < c->n_fair_samples; i++)
                fair = MIN(fair, c->fair_samples[i]);
        if (c->n_fair_samples == ELEMENTSOF(c->fair_samples)) {
                if (fair >= kc.fair_server) {
                        kc.fair_server = fair;
                        kc.fair_server_measured = true;
                } else
                        kc.fair_server_uncounted = kc.fair_server - fair;
                if (!kc.admission_off)
                        kc.usable = kc.raw > kc.fair_server ? kc.raw - kc.fair_server : 0;
        }
        *ret = kc;
        return 0;
}

int capacity_update(Capacity *c, bool reread) {
        if (reread)
                c->rt_read_ns = 0; /* asked for: read the sysctls now */
        return kcap_read(c, &c->kcap);
}

/* One measurement of the fair servers' reserve: the root domain's dl_bw->total_bw (read before and
 * after the scan of /proc, and only kept when both agree) less what the scan found every deadline
 * thread to hold. Bandwidth the kernel still holds for a thread that just left SCHED_DEADLINE (until
 * its 0-lag time) makes one measurement too large, never too small, so the reserve is the smallest of
 * the last three, and is used only once there are three (20 s after start): bandwidth the kernel
 * keeps for that long is lost to everyone, and edfd must not promise it. Without a readable debugfs,
 * or with several root domains, the reserve stays what the servers are set to take (capacity_read()). */
static void fair_server_sample(Capacity *c, bool have_before, uint64_t before, uint64_t all_dl,
                               CapacityReport *report) {
        uint64_t after;

        if (!have_before || capacity_read_total_bw(&after) < 0 || after != before || before < all_dl)
                return;
        memmove(c->fair_samples + 1, c->fair_samples, sizeof c->fair_samples - sizeof c->fair_samples[0]);
        c->fair_samples[0] = before - all_dl;
        if (c->n_fair_samples < ELEMENTSOF(c->fair_samples))
                c->n_fair_samples++;
        if (!c->fair_reported) {
                KernelCapacity implied;
                if (capacity_read(&implied) == 0) {
                        report->fair_first = true;
                        report->fair_measured = before - all_dl;
                        report->fair_set = implied.fair_server;
                }
                c->fair_reported = true;
        }
}

void capacity_refresh(Capacity *c, const Tree *t, CapacityReport *ret) {
        CapacityReport report = {};
        uint64_t all_dl = 0, total_before = 0;
        Holders found;
        KernelCapacity kc;
        int r;

        r = capacity_read_total_bw(&total_before);
        if ((r == -ERANGE) != c->count_negative) {
                c->count_negative = r == -ERANGE;
                report.count_negative_changed = true;
        }
        if (capacity_scan_unmanaged(t, &found, &all_dl) == 0) {
                report.unmanaged_changed = found.n != c->unmanaged.n;
                c->unmanaged = found;
                c->scanned_ns = now_ns();
                fair_server_sample(c, r == 0, total_before, all_dl, &report);
        }
        if (kcap_read(c, &kc) == 0)
                c->kcap = kc;
        if ((c->kcap.fair_server_uncounted > 0) != c->fair_uncounted_reported) {
                c->fair_uncounted_reported = c->kcap.fair_server_uncounted > 0;
                report.fair_uncounted_changed = true;
        }
        if (c->kcap.admission_off && !c->admission_off_reported) {
                report.admission_off_began = true;
                c->admission_off_reported = true;
        } else if (!c->kcap.admission_off && c->admission_off_reported) {
                report.admission_off_ended = true;
                c->admission_off_reported = false;
        }
        *ret = report;
}
