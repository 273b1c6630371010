/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic/cpulist.h"
#include "basic/parse.h"

static int number(const char *s, size_t len, unsigned *ret, const char **ret_reason) {
        uint32_t v;
        int r = parse_u32_slice(s, len, &v, NULL);

        if (r == -ERANGE || (r == 0 && v >= CPU_MASK_MAX)) {
                if (ret_reason)
                        *ret_reason = "names a CPU above 1023";
                return -ERANGE;
        }
        if (r < 0) {
                if (ret_reason)
                        *ret_reason = "is not a CPU list (write it as 1 or 2-3,5)";
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

int cpu_mask_parse(const char *s, size_t len, CpuMask *ret, const char **ret_reason) {
        CpuMask m = {};
        size_t i = 0;

        if (!s || !ret)
                return -EINVAL;
        if (len > 0 && s[len - 1] == '\n')
                len--;
        while (i < len) {
                size_t end = i, dash = SIZE_MAX;
                unsigned lo, hi;
                int r;

                while (end < len && s[end] != ',') {
                        if (s[end] == '-' && dash == SIZE_MAX)
                                dash = end;
                        end++;
                }
                if (dash == SIZE_MAX) {
                        r = number(s + i, end - i, &lo, ret_reason);
                        hi = lo;
                } else {
                        r = number(s + i, dash - i, &lo, ret_reason);
                        if (r >= 0)
                                r = number(s + dash + 1, end - dash - 1, &hi, ret_reason);
                }
                if (r < 0)
                        return r;
                if (hi < lo) {
                        if (ret_reason)
                                *ret_reason = "has a reversed range";
                        return -EINVAL;
                }
                for (unsigned c = lo; c <= hi; c++)
                        cpu_mask_set(&m, c);
                if (end < len && end + 1 == len) {
                        if (ret_reason)
                                *ret_reason = "is not a CPU list (write it as 1 or 2-3,5)";
                        return -EINVAL; /* trailing comma */
                }
                i = end + 1;
        }
        *ret = m;
        return 0;
}

char *cpu_mask_format(const CpuMask *m, char *buf, size_t size) {
        size_t at = 0;

        if (!buf || size == 0)
                return NULL;
        buf[0] = '\0';
        for (unsigned c = 0; c < CPU_MASK_MAX; c++) {
                unsigned end = c;
                int n;

                if (!cpu_mask_test(m, c))
                        continue;
                while (end + 1 < CPU_MASK_MAX && cpu_mask_test(m, end + 1))
                        end++;
                if (end == c)
                        n = snprintf(buf + at, size - at, "%s%u", at ? "," : "", c);
                else
                        n = snprintf(buf + at, size - at, "%s%u-%u", at ? "," : "", c, end);
                if (n < 0 || (size_t) n >= size - at)
                        return NULL;
                at += (size_t) n;
                c = end;
        }
        return buf;
}

unsigned cpu_mask_count(const CpuMask *m) {
        unsigned n = 0;

        for (size_t i = 0; i < CPU_MASK_WORDS; i++)
                n += (unsigned) __builtin_popcountll(m->w[i]);
        return n;
}

bool cpu_mask_empty(const CpuMask *m) {
        return cpu_mask_first(m) < 0;
}

bool cpu_mask_overlap(const CpuMask *a, const CpuMask *b, unsigned *ret_cpu) {
        for (size_t i = 0; i < CPU_MASK_WORDS; i++) {
                uint64_t x = a->w[i] & b->w[i];

                if (x) {
                        if (ret_cpu)
                                *ret_cpu = (unsigned) (i * 64 + (size_t) __builtin_ctzll(x));
                        return true;
                }
        }
        return false;
}

bool cpu_mask_subset(const CpuMask *a, const CpuMask *b, unsigned *ret_cpu) {
        for (size_t i = 0; i < CPU_MASK_WORDS; i++) {
                uint64_t x = a->w[i] & ~b->w[i];

                if (x) {
                        if (ret_cpu)
                                *ret_cpu = (unsigned) (i * 64 + (size_t) __builtin_ctzll(x));
                        return false;
                }
        }
        return true;
}

void cpu_mask_or(CpuMask *a, const CpuMask *b) {
        for (size_t i = 0; i < CPU_MASK_WORDS; i++)
                a->w[i] |= b->w[i];
}

void cpu_mask_andnot(CpuMask *a, const CpuMask *b) {
        for (size_t i = 0; i < CPU_MASK_WORDS; i++)
                a->w[i] &= ~b->w[i];
}

int cpu_mask_first(const CpuMask *m) {
        for (size_t i = 0; i < CPU_MASK_WORDS; i++)
                if (m->w[i])
                        return (int) (i * 64 + (size_t) __builtin_ctzll(m->w[i]));
        return -1;
}
