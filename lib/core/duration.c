/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/duration.h"

/* A decimal number "123" or "1.25" at the start of s. On success *ret_end points behind it. The
 * fraction is returned without trailing zeros as frac / 10^frac_digits. */
static int decimal_parse(const char *s, uint64_t *ret_int, uint64_t *ret_frac, unsigned *ret_frac_digits,
                         const char **ret_end, const char **ret_reason) {
        uint64_t v = 0, frac = 0;
        unsigned digits = 0, zeros = 0;
        const char *p = s;

        if (*p == '\0')
                return *ret_reason = "is empty", -EINVAL;
        if (*p == '-')
                return *ret_reason = "is negative", -EINVAL;
        if (*p == '+')
                return *ret_reason = "has a sign (write it without +)", -EINVAL;
        for (const char *q = s; *q; q++)
                if (*q == ' ' || (*q >= '\t' && *q <= '\r'))
                        return *ret_reason = "contains white space", -EINVAL;
        if (*p < '0' || *p > '9')
                return *ret_reason = "does not start with a digit", -EINVAL;

        for (; *p >= '0' && *p <= '9'; p++)
                if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t) (*p - '0'), &v))
                        return *ret_reason = "is too large", -ERANGE;

        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return *ret_reason = "has a decimal point without digits after it", -EINVAL;
                for (; *p >= '0' && *p <= '9'; p++) {
                        if (*p == '0') {
                                /* Defer zeros: they matter only if a non-zero digit follows. */
                                zeros++;
                                continue;
                        }
                        /* Any fraction of more than 9 significant decimals is finer than 1 ns for
                         * every unit we have, so stop counting there. */
                        if (digits + zeros + 1 > 9) {
                                digits = 10;
                                zeros = 0;
                                continue;
                        }
                        for (; zeros > 0; zeros--, digits++)
                                frac *= 10;
                        frac = frac * 10 + (uint64_t) (*p - '0');
                        digits++;
                }
        }

        *ret_int = v;
        *ret_frac = frac;
        *ret_frac_digits = digits;
        *ret_end = p;
        return 0;
}

static uint64_t pow10_u64(unsigned n) {
        uint64_t r = 1;
        while (n-- > 0)
                r *= 10;
        return r;
}

/* int.frac * mult, exactly, or an error. */
static int scale(uint64_t v, uint64_t frac, unsigned frac_digits, uint64_t mult, uint64_t *ret,
                 const char **ret_reason) {
        uint64_t r, f = 0;

        if (frac_digits > 0) {
                uint64_t d;
                if (frac_digits > 9)
                        return *ret_reason = "is finer than 1 ns", -EINVAL;
                d = pow10_u64(frac_digits);
                /* frac < 10^9 and mult <= 10^9: the product fits in 64 bits. */
                if ((frac * mult) % d != 0)
                        return *ret_reason = "is finer than 1 ns", -EINVAL;
                f = frac * mult / d;
        }
        if (__builtin_mul_overflow(v, mult, &r) || __builtin_add_overflow(r, f, &r))
                return *ret_reason = "is too large (the limit is 18446744073709551615ns, about 584 years)", -ERANGE;
        *ret = r;
        return 0;
}

static const struct {
        const char *suffix;
        uint64_t mult;
} units[] = {
        { "ns", 1 },
        { "us", NSEC_PER_USEC },
        { "ms", NSEC_PER_MSEC },
        { "s", NSEC_PER_SEC },
};

int duration_parse(const char *s, uint64_t *ret_ns, const char **ret_reason) {
        uint64_t v, frac;
        unsigned digits;
        const char *end, *reason = NULL;
        int r;

        if (!s)
                s = "";
        r = decimal_parse(s, &v, &frac, &digits, &end, &reason);
        if (r < 0)
                goto fail;
        if (*end == '\0') {
                reason = "has no unit (write it as 10ms, 250us, 1.5s)";
                r = -EINVAL;
                goto fail;
        }
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strcmp(end, units[i].suffix) == 0) {
                        r = scale(v, frac, digits, units[i].mult, ret_ns, &reason);
                        if (r < 0)
                                goto fail;
                        return 0;
                }
        if (*end == '%')
                reason = "is a percentage, not a duration";
        else
                reason = "has an unknown unit (use ns, us, ms or s)";
        r = -EINVAL;
fail:
        if (ret_reason)
                *ret_reason = reason;
        return r;
}

int percent_parse(const char *s, uint64_t *ret_runtime_ns, const char **ret_reason) {
        uint64_t v, frac;
        unsigned digits;
        const char *end, *reason = NULL;
        int r;

        if (!s)
                s = "";
        r = decimal_parse(s, &v, &frac, &digits, &end, &reason);
        if (r < 0)
                goto fail;
        if (strcmp(end, "%") != 0) {
                reason = *end == '\0' ? "has no % sign (write it as 20%)" : "is not a percentage (write it as 20%)";
                r = -EINVAL;
                goto fail;
        }
        /* 1% of PERCENT_PERIOD_NS. */
        r = scale(v, frac, digits, PERCENT_PERIOD_NS / 100, ret_runtime_ns, &reason);
        if (r < 0)
                goto fail;
        return 0;
fail:
        if (ret_reason)
                *ret_reason = reason;
        return r;
}

char *duration_format(uint64_t ns, char buf[static DURATION_MAX]) {
        static const struct {
                const char *suffix;
                uint64_t mult;
        } fmt[] = {
                { "s", NSEC_PER_SEC },
                { "ms", NSEC_PER_MSEC },
                { "us", NSEC_PER_USEC },
        };

        for (size_t i = 0; i < ELEMENTSOF(fmt); i++) {
                uint64_t m = fmt[i].mult, whole = ns / m, rest = ns % m, milli = m / 1000;
                if (ns < m || rest % milli != 0)
                        continue;
                rest /= milli; /* thousandths of the unit */
                if (rest == 0)
                        snprintf(buf, DURATION_MAX, "%" PRIu64 "%s", whole, fmt[i].suffix);
                else {
                        char dec[4] = { (char) ('0' + rest / 100), (char) ('0' + rest / 10 % 10),
                                        (char) ('0' + rest % 10), '\0' };
                        int n = 3;
                        while (n > 0 && dec[n - 1] == '0')
                                dec[--n] = '\0';
                        snprintf(buf, DURATION_MAX, "%" PRIu64 ".%s%s", whole, dec, fmt[i].suffix);
                }
                return buf;
        }
        snprintf(buf, DURATION_MAX, "%" PRIu64 "ns", ns);
        return buf;
}
