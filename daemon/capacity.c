/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/bandwidth.h"
#include "capacity.h"
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

/* The fair server exists since 6.12: 50 ms per 1 s per CPU by default. */
static bool kernel_has_fair_server(void) {
        struct utsname u;
        unsigned major = 0, minor = 0;

        if (access("/sys/kernel/debug/sched/fair_server", F_OK) == 0)
                return true;
        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
                return false;
        return major > 6 || (major == 6 && minor >= 12);
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
        if (kernel_has_fair_server()) {
                uint64_t one;
                (void) bw_of(50 * NSEC_PER_MSEC, NSEC_PER_SEC, &one);
                c.fair_server = one * c.ncpus;
        }
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
        uint64_t total, all;
        unsigned n;
} UnmanagedScan;

static int scan_thread(const ProcEntry *e, void *userdata) {
        UnmanagedScan *s = userdata;
        const Reservation *r;
        SchedInfo si;
        ProcStat st;
        uint64_t bw;

        if (sched_get(e->tid, &si) < 0 || si.policy != SCHED_DEADLINE)
                return 0;
        /* An exited thread not yet reaped still reports its policy, but the kernel gave its
         * bandwidth back when it died: it holds nothing. */
        if (proc_entry_stat(e, PROC_STAT_STATE, &st) < 0 || st.state == 'Z' || st.state == 'X')
                return 0;
        if (bw_of(si.runtime, si.period, &bw) < 0)
                return 0;
        if (__builtin_add_overflow(s->all, bw, &s->all))
                s->all = UINT64_MAX;
        r = tree_find_thread(s->tree, (uint32_t) e->tid);
        if (r && sched_thread_is(e->pid, e->tid, r->identity) == 1)
                return 0;
        if (!__builtin_add_overflow(s->total, bw, &s->total))
                s->n++;
        return 0;
}

int capacity_scan_unmanaged(const Tree *t, uint64_t *ret_bw, unsigned *ret_threads, uint64_t *ret_all_bw) {
        UnmanagedScan s = { .tree = t };
        int r;

        r = proc_walk_all_threads(scan_thread, &s);
        if (r < 0)
                return r;
        *ret_bw = s.total;
        if (ret_threads)
                *ret_threads = s.n;
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
