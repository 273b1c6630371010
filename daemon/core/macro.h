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

/* Free a NULL-terminated array of strings and the array itself; returns NULL. */
char **strv_free(char **l);
static inline void strv_freep(char ***l) {
        strv_free(*l);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Deep copy of a NULL-terminated string array (NULL copies to NULL). Returns NULL without memory. */
char **strv_copy(char *const *l);
/* Number of strings in l (0 for NULL). */
size_t strv_length(char *const *l);
