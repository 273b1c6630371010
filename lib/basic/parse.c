/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "basic/parse.h"

static int fail(const char **ret_reason, const char *reason, int r) {
        if (ret_reason)
                *ret_reason = reason;
        return r;
}

/* digits '.' digits: a number, but not a whole one (the reason says so rather than "not decimal"). */
static int is_fraction(const char *s, size_t len) {
        const char *dot = memchr(s, '.', len);
        size_t i;

        if (!dot || dot == s || dot == s + len - 1)
                return 0;
        for (i = 0; i < len; i++)
                if (s + i != dot && (s[i] < '0' || s[i] > '9'))
                        return 0;
        return 1;
}

static int parse_slice(const char *s, size_t len, uint64_t max, const char *too_large, uint64_t *ret,
                       const char **ret_reason) {
        uint64_t v = 0;

        if (!s || len == 0)
                return fail(ret_reason, "is empty", -EINVAL);
        if (s[0] == '-')
                return fail(ret_reason, "is negative", -EINVAL);
        for (size_t i = 0; i < len; i++)
                if (s[i] < '0' || s[i] > '9')
                        return fail(ret_reason, is_fraction(s, len) ? "is not a whole number" : "is not a decimal number",
                                    -EINVAL);
        if (len > 1 && s[0] == '0')
                return fail(ret_reason, "has a leading zero (write it without, as in 10)", -EINVAL);
        for (size_t i = 0; i < len; i++)
                if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t) (s[i] - '0'), &v) ||
                    v > max)
                        return fail(ret_reason, too_large, -ERANGE);
        *ret = v;
        return 0;
}

#define TOO_LARGE_U64 "is too large (the largest is 18446744073709551615)"
#define TOO_LARGE_U32 "is too large (the largest is 4294967295)"

int parse_u64_slice(const char *s, size_t len, uint64_t *ret, const char **ret_reason) {
        return parse_slice(s, len, UINT64_MAX, TOO_LARGE_U64, ret, ret_reason);
}

int parse_u32_slice(const char *s, size_t len, uint32_t *ret, const char **ret_reason) {
        uint64_t v;
        int r;

        r = parse_slice(s, len, UINT32_MAX, TOO_LARGE_U32, &v, ret_reason);
        if (r < 0)
                return r;
        *ret = (uint32_t) v;
        return 0;
}

int parse_u64(const char *s, uint64_t *ret, const char **ret_reason) {
        return parse_u64_slice(s, s ? strlen(s) : 0, ret, ret_reason);
}

int parse_u32(const char *s, uint32_t *ret, const char **ret_reason) {
        return parse_u32_slice(s, s ? strlen(s) : 0, ret, ret_reason);
}
