/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration from a FILE (conf_parse_file(), conf.h): read to its end, at most CONF_SIZE_MAX
 * bytes, then parsed from the buffer. The only file I/O of the configuration. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf-internal.h"

int conf_parse_file(FILE *f, const char *filename, Config **ret, ConfErrors *errors) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, size = 0;

        for (;;) {
                size_t n;

                if (len == size) {
                        size_t a = size ? size * 2 : 64 * 1024;
                        char *b;

                        if (size > CONF_SIZE_MAX) {
                                Ctx c = { .filename = filename, .errors = errors };

                                conf_error_at(&c, 0, 0, "is larger than %u MiB", CONF_SIZE_MAX >> 20);
                                return c.oom ? -ENOMEM : -EINVAL;
                        }
                        a = MIN(a, (size_t) CONF_SIZE_MAX + 1);
                        b = realloc(buf, a);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        size = a;
                }
                n = fread(buf + len, 1, size - len, f);
                len += n;
                if (n == 0) {
                        if (ferror(f)) {
                                Ctx c = { .filename = filename, .errors = errors };
                                int e = errno ?: EIO;

                                conf_error_at(&c, 0, 0, "cannot read: %s", strerror(e));
                                return c.oom ? -ENOMEM : -EIO;
                        }
                        break;
                }
        }
        return conf_parse_buffer(buf, len, filename, ret, errors);
}
