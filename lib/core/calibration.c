/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The calibration file's text, its staleness, and the budget rule that uses it (calibration.h). */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/parse.h"
#include "core/calibration.h"
#include "core/duration.h"

enum {
        K_VERSION, K_KERNEL, K_CPU_MODEL, K_CPUS, K_HZ, K_MEASURED, K_PERIOD, K_JOBS, K_OVERHEAD, K_P50, K_P99,
        K_MAX, _K_COUNT
};

static const char *const key_names[_K_COUNT] = {
        [K_VERSION] = "version", [K_KERNEL] = "kernel", [K_CPU_MODEL] = "cpu-model", [K_CPUS] = "cpus",
        [K_HZ] = "hz", [K_MEASURED] = "measured", [K_PERIOD] = "period", [K_JOBS] = "jobs",
        [K_OVERHEAD] = "overhead", [K_P50] = "p50", [K_P99] = "p99", [K_MAX] = "max",
};

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

/* Copy a text value; refuses what does not fit or is empty. */
static int set_text(char *dst, const char *s, size_t len, const char **ret_reason) {
        if (len == 0)
                return *ret_reason = "has an empty value", -EINVAL;
        if (len >= MACHINE_TEXT_MAX)
                return *ret_reason = "has a value longer than 159 characters", -EINVAL;
        memcpy(dst, s, len);
        dst[len] = '\0';
        return 0;
}

static int parse_line(const char *s, size_t len, Calibration *c, bool seen[static _K_COUNT], const char **ret_reason) {
        const char *eq = memchr(s, '=', len), *v;
        size_t klen, vlen;
        uint64_t n;
        int k, r;

        if (!eq)
                return *ret_reason = "is not \"key = value\"", -EINVAL;
        klen = (size_t) (eq - s);
        while (klen > 0 && is_blank(s[klen - 1]))
                klen--;
        v = eq + 1;
        vlen = len - (size_t) (v - s);
        while (vlen > 0 && is_blank(*v))
                v++, vlen--;
        for (k = 0; k < _K_COUNT; k++)
                if (strlen(key_names[k]) == klen && memcmp(key_names[k], s, klen) == 0)
                        break;
        if (k == _K_COUNT)
                return *ret_reason = "has an unknown key", -EINVAL;
        if (seen[k])
                return *ret_reason = "repeats a key", -EINVAL;
        seen[k] = true;

        if (k == K_KERNEL)
                return set_text(c->machine.kernel, v, vlen, ret_reason);
        if (k == K_CPU_MODEL)
                return set_text(c->machine.cpu_model, v, vlen, ret_reason);
        r = parse_u64_slice(v, vlen, &n, ret_reason);
        if (r < 0)
                return -EINVAL; /* too large too: the file is bad, whatever the number */
        switch (k) {
        case K_VERSION:
                if (n != CALIBRATION_VERSION)
                        return *ret_reason = "has a version this edfctl does not read (it reads 1)", -EINVAL;
                break;
        case K_CPUS:
                if (n == 0 || n > UINT32_MAX)
                        return *ret_reason = "has a CPU count of 0 or above 4294967295", -EINVAL;
                c->machine.cpus = (unsigned) n;
                break;
        case K_HZ: c->hz = n; break;
        case K_MEASURED:
                if (n > INT64_MAX)
                        return *ret_reason = "has a time beyond 64 signed bits", -EINVAL;
                c->measured = (int64_t) n;
                break;
        case K_PERIOD: c->period = n; break;
        case K_JOBS: c->jobs = n; break;
        case K_OVERHEAD: c->overhead = n; break;
        case K_P50: c->p50 = n; break;
        case K_P99: c->p99 = n; break;
        case K_MAX: c->max = n; break;
        }
        return 0;
}

int calibration_parse(const char *text, Calibration *ret, unsigned *ret_line, const char **ret_reason) {
        bool seen[_K_COUNT] = {};
        Calibration c = {};
        unsigned line = 0;

        for (const char *s = text; *s;) {
                const char *end = strchr(s, '\n');
                size_t len = end ? (size_t) (end - s) : strlen(s);
                int r;

                line++;
                /* Trim; a line whose first character is # is a comment (values may hold a #: uname's
                 * version does). */
                while (len > 0 && is_blank(*s))
                        s++, len--;
                while (len > 0 && (is_blank(s[len - 1]) || s[len - 1] == '\r'))
                        len--;
                if (len > 0 && *s != '#') {
                        r = parse_line(s, len, &c, seen, ret_reason);
                        if (r < 0)
                                return *ret_line = line, r;
                }
                if (!end)
                        break;
                s = end + 1;
        }
        *ret_line = 0;
        for (int k = 0; k < _K_COUNT; k++)
                if (!seen[k])
                        return *ret_reason = k == K_VERSION ? "has no version line: not an edfd calibration"
                                                            : "lacks a key (version, kernel, cpu-model, cpus, hz, "
                                                              "measured, period, jobs, overhead, p50, p99, max)",
                               -EINVAL;
        if (c.period == 0 || c.jobs == 0)
                return *ret_reason = "has a period or a job count of 0", -EINVAL;
        /* The overhead is the 99.9th percentile rounded up to the microsecond: it may pass max. */
        if (!(c.p50 <= c.p99 && c.p99 <= c.max && c.p99 <= c.overhead))
                return *ret_reason = "has quantiles out of order (need p50 <= p99 <= max and p99 <= overhead)", -EINVAL;
        *ret = c;
        return 0;
}

int calibration_format(const Calibration *c, char *buf, size_t size) {
        char o[DURATION_MAX], a[DURATION_MAX], b[DURATION_MAX], m[DURATION_MAX];
        int n;

        n = snprintf(buf, size,
                     "# edfd's per-job overhead on this machine, measured by edfctl calibrate;\n"
                     "# edfctl admit --work adds it to every budget. It holds while kernel, cpu-model\n"
                     "# and cpus match the machine; when any differs, run edfctl calibrate again.\n"
                     "# Times in ns: overhead %s (99.9th percentile, rounded up to the us), p50 %s, p99 %s, max %s.\n"
                     "version = %d\n"
                     "kernel = %s\n"
                     "cpu-model = %s\n"
                     "cpus = %u\n"
                     "hz = %" PRIu64 "\n"
                     "measured = %" PRId64 "\n"
                     "period = %" PRIu64 "\n"
                     "jobs = %" PRIu64 "\n"
                     "overhead = %" PRIu64 "\n"
                     "p50 = %" PRIu64 "\n"
                     "p99 = %" PRIu64 "\n"
                     "max = %" PRIu64 "\n",
                     duration_format(c->overhead, o), duration_format(c->p50, a), duration_format(c->p99, b),
                     duration_format(c->max, m), CALIBRATION_VERSION, c->machine.kernel, c->machine.cpu_model,
                     c->machine.cpus, c->hz, c->measured, c->period, c->jobs, c->overhead, c->p50, c->p99, c->max);
        if (n < 0 || (size_t) n >= size)
                return -ENOSPC;
        return n;
}

const char *calibration_stale(const Calibration *c, const MachineId *now, char *buf, size_t size) {
        if (strcmp(c->machine.kernel, now->kernel) != 0)
                snprintf(buf, size, "it was measured on kernel \"%s\", this is \"%s\"", c->machine.kernel, now->kernel);
        else if (strcmp(c->machine.cpu_model, now->cpu_model) != 0)
                snprintf(buf, size, "it was measured on CPU \"%s\", this is \"%s\"", c->machine.cpu_model,
                         now->cpu_model);
        else if (c->machine.cpus != now->cpus)
                snprintf(buf, size, "it was measured with %u CPUs online, %u are now", c->machine.cpus, now->cpus);
        else
                return NULL;
        return buf;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

uint64_t quantile_permille(uint64_t *v, size_t n, unsigned permille) {
        size_t rank;

        if (n == 0)
                return 0;
        if (permille > 1000)
                permille = 1000;
        qsort(v, n, sizeof *v, cmp_u64);
        /* Nearest rank: the smallest value with at least permille/1000 of the values at or below it. */
        rank = n <= SIZE_MAX / 1000 ? (n * permille + 999) / 1000 : n / 1000 * permille;
        return v[rank == 0 ? 0 : rank - 1];
}

int budget_from_work(uint64_t work, uint64_t margin, uint64_t overhead, uint64_t *ret_runtime) {
        uint64_t extra, runtime;

        /* extra = ceil(work x margin / PERCENT_PERIOD_NS): the margin is a safety bound, so never
         * round it away. */
        if (__builtin_mul_overflow(work, margin, &extra))
                return -ERANGE;
        extra = extra / PERCENT_PERIOD_NS + (extra % PERCENT_PERIOD_NS != 0);
        if (__builtin_add_overflow(work, extra, &runtime) || __builtin_add_overflow(runtime, overhead, &runtime))
                return -ERANGE;
        *ret_runtime = runtime;
        return 0;
}
