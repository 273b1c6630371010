/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Small helpers shared by every module. No I/O, no dependencies. */

#include <stdint.h>
#include <stdlib.h>

#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_SEC  UINT64_C(1000000000)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _pure_ __attribute__((pure))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Hand a pointer over to a new owner: returns it and clears the variable. */
#define TAKE_PTR(p)                                 \
        ({                                          \
                __typeof__(p) _take_tmp = (p);      \
                (p) = NULL;                         \
                _take_tmp;                          \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)
