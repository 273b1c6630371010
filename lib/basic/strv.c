/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "basic/macro.h"
#include "basic/strv.h"

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;

        if (!l)
                return 0;
        while (l[n])
                n++;
        return n;
}

char **strv_copy(char *const *l) {
        size_t n = strv_length(l);
        char **c;

        if (!l)
                return NULL;
        c = calloc(n + 1, sizeof(char *));
        if (!c)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                c[i] = strdup(l[i]);
                if (!c[i])
                        return strv_free(c);
        }
        return c;
}
