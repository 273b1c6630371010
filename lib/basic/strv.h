/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* NULL-terminated arrays of strings. */

#include <stddef.h>

#include "basic/macro.h"

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
/* Append a formatted string to *l (NULL: a new array), keeping it NULL-terminated. Returns 0, or
 * -ENOMEM (l as it was). */
_printf_(2, 3) int strv_appendf(char ***l, const char *fmt, ...);
