/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for duration_parse(), percent_parse() and duration_format().
 *
 * Checks, for every input:
 * - a refusal is -EINVAL or -ERANGE with a non-empty reason, and leaves the result untouched;
 * - an accepted duration agrees with a small reference parser written from duration.h, and
 *   formats back to a string that parses to the same value;
 * - "X%" and "Xms" mean the same number of nanoseconds (X% of 100 ms is X ms), so percent_parse()
 *   and duration_parse() must agree on the pair exactly, refusals included;
 * - the first 8 bytes as a number format and parse back exactly.
 *
 * Build (from the top directory, with every .c file of lib/basic and lib/core):
 *   clang -g -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Ilib lib/basic/[a-z]*.c lib/core/[a-z]*.c \
 *         tests/fuzz/fuzz-duration.c */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"

#define SENTINEL UINT64_C(0xdeadbeefcafef00d)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *input) {
        fprintf(stderr, "fuzz-duration: %s for input \"%s\"\n", what, input);
        abort();
}

/* Reference parser: digits ['.' digits] unit, nothing else. Returns 0, -EINVAL, -ERANGE, or 1 when
 * duration.h leaves the answer open (".5ms", "1.ms", or both too large and finer than 1 ns). */
static int ref_parse(const char *s, uint64_t *ret) {
        static const struct {
                const char *unit;
                unsigned exp10;
        } units[] = { { "ns", 0 }, { "us", 3 }, { "ms", 6 }, { "s", 9 } };
        const char *int_start, *int_end, *frac_start = NULL, *frac_end = NULL, *p = s;
        unsigned exp10 = 0, fd, sig;
        unsigned __int128 v = 0, f = 0;
        bool found = false, too_big = false, too_fine, int_too_big;

        int_start = p;
        while (*p >= '0' && *p <= '9')
                p++;
        int_end = p;
        if (*p == '.') {
                frac_start = ++p;
                while (*p >= '0' && *p <= '9')
                        p++;
                frac_end = p;
        }
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
                if (strcmp(p, units[i].unit) == 0) {
                        exp10 = units[i].exp10;
                        found = true;
                }
        {
                /* an integer part above UINT64_MAX: which problem comes first is open when there
                 * is another one */
                const char *q = int_start;

                while (q < int_end - 1 && *q == '0')
                        q++;
                int_too_big = int_end - q > 20 || (int_end - q == 20 && memcmp(q, "18446744073709551615", 20) > 0);
        }
        if (int_start == int_end) {
                if (frac_start && frac_end > frac_start && found)
                        return 1; /* ".5ms" */
                return -EINVAL;
        }
        if (frac_start && frac_end == frac_start)
                return found || int_too_big ? 1 : -EINVAL; /* "1.ms" */
        if (!found)
                return int_too_big ? 1 : -EINVAL;
        /* the integer part, without leading zeros */
        while (int_start < int_end - 1 && *int_start == '0')
                int_start++;
        sig = (unsigned) (int_end - int_start);
        if (sig > 21)
                too_big = true;
        else
                for (const char *q = int_start; q < int_end; q++)
                        v = v * 10 + (unsigned) (*q - '0');
        /* the fraction, without trailing zeros */
        if (frac_start)
                while (frac_end > frac_start && frac_end[-1] == '0')
                        frac_end--;
        fd = frac_start ? (unsigned) (frac_end - frac_start) : 0;
        too_fine = fd > exp10;
        if (!too_fine)
                for (const char *q = frac_start; q && q < frac_end; q++)
                        f = f * 10 + (unsigned) (*q - '0');
        if (!too_big) {
                unsigned __int128 m = 1, total;

                for (unsigned i = 0; i < exp10; i++)
                        m *= 10;
                total = v * m;
                if (!too_fine) {
                        unsigned __int128 fm = 1;

                        for (unsigned i = fd; i < exp10; i++)
                                fm *= 10;
                        total += f * fm;
                }
                too_big = total > UINT64_MAX;
                if (!too_big && !too_fine)
                        *ret = (uint64_t) total;
        }
        if (too_big && too_fine)
                return 1;
        if (too_big)
                return -ERANGE;
        if (too_fine)
                return -EINVAL;
        return 0;
}

static void check_round_trip(uint64_t ns, const char *input) {
        char buf[DURATION_MAX + 16];
        const char *reason = NULL;
        uint64_t back = SENTINEL;

        memset(buf, 0, sizeof buf);
        duration_format(ns, buf);
        if (strlen(buf) >= DURATION_MAX)
                fail("duration_format() result too long", input);
        if (duration_parse(buf, &back, &reason) != 0 || back != ns)
                fail("duration_format() does not parse back", input);
}

static int parse_checked(int (*parse)(const char *, uint64_t *, const char **), const char *s, uint64_t *ret) {
        const char *reason = NULL;
        uint64_t v = SENTINEL;
        int r;

        r = parse(s, &v, &reason);
        if (r < 0) {
                if (r != -EINVAL && r != -ERANGE)
                        fail("refused with an errno other than EINVAL/ERANGE", s);
                if (!reason || !*reason)
                        fail("refused without a reason", s);
                if (v != SENTINEL)
                        fail("result written on a refusal", s);
        } else if (r != 0)
                fail("positive return", s);
        *ret = v;
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s, *ms;
        uint64_t d = 0, p = 0, want = 0, x;
        int rd, rp, rr;

        if (size > 4096)
                return 0;
        s = malloc(size + 1);
        ms = malloc(size + 2);
        if (!s || !ms)
                abort();
        memcpy(s, data, size);
        s[size] = 0;

        rd = parse_checked(duration_parse, s, &d);
        rr = ref_parse(s, &want);
        if (rr != 1 && strlen(s) == size) {
                if (rd != rr)
                        fail(rd == 0 ? "accepted what the rules refuse"
                                     : "refused what the rules accept, or the wrong errno", s);
                if (rd == 0 && d != want)
                        fail("wrong value", s);
        }
        if (rd == 0)
                check_round_trip(d, s);

        rp = parse_checked(percent_parse, s, &p);
        if (rp == 0)
                check_round_trip(p, s);
        /* X% == Xms */
        if (size > 0 && s[size - 1] == '%' && strlen(s) == size) {
                uint64_t m = 0;
                int rm;

                memcpy(ms, s, size - 1);
                strcpy(ms + size - 1, "ms");
                rm = parse_checked(duration_parse, ms, &m);
                if (rm != rp)
                        fail("percent_parse(X%) and duration_parse(Xms) disagree on success/errno", s);
                if (rp == 0 && m != p)
                        fail("percent_parse(X%) != duration_parse(Xms)", s);
        }

        if (size >= 8) {
                memcpy(&x, data, 8);
                check_round_trip(x, "(first 8 bytes)");
                check_round_trip(x >> (data[size - 1] % 64), "(first 8 bytes, shifted)");
        }
        free(s);
        free(ms);
        return 0;
}
