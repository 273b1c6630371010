/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Untrusted text made safe for a terminal and for JSON (see escape.h). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/escape.h"

size_t utf8_char_len(const char *s, size_t len) {
        const unsigned char *u = (const unsigned char *) s;
        uint32_t cp;
        size_t n;

        if (len == 0)
                return 0;
        if (u[0] < 0x80)
                return 1;
        if (u[0] >= 0xc2 && u[0] <= 0xdf)
                n = 2, cp = u[0] & 0x1f;
        else if (u[0] >= 0xe0 && u[0] <= 0xef)
                n = 3, cp = u[0] & 0x0f;
        else if (u[0] >= 0xf0 && u[0] <= 0xf4)
                n = 4, cp = u[0] & 0x07;
        else
                return 0; /* a continuation byte, C0/C1 (overlong two-byte forms), F5..FF */
        if (len < n)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((u[i] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (u[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0; /* overlong, above Unicode, a surrogate */
        return n;
}

/* A valid character that a terminal obeys rather than shows. */
static bool shown_escaped(const unsigned char *u, size_t n) {
        if (n == 2)
                return u[0] == 0xc2 && u[1] <= 0x9f;            /* C1: U+0080..U+009F */
        if (n == 3 && u[0] == 0xe2 && u[1] == 0x80)
                return u[2] >= 0xaa && u[2] <= 0xae;            /* U+202A..U+202E */
        if (n == 3 && u[0] == 0xe2 && u[1] == 0x81)
                return u[2] >= 0xa6 && u[2] <= 0xa9;            /* U+2066..U+2069 */
        return false;
}

typedef struct Out {
        char *buf;
        size_t size;
        size_t kept; /* bytes in buf: every piece before the first that did not fit */
        size_t len;  /* the whole result's */
        bool cut;
} Out;

static void put(Out *o, const void *piece, size_t n) {
        if (!o->cut && o->kept + n < o->size) {
                memcpy(o->buf + o->kept, piece, n);
                o->kept += n;
        } else
                o->cut = true;
        o->len += n;
}

static size_t finish(Out *o) {
        if (o->size > 0)
                o->buf[o->kept] = '\0';
        return o->len;
}

static void put_hex(Out *o, unsigned char c) {
        static const char hex[] = "0123456789abcdef";
        char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 0xf] };

        put(o, e, sizeof(e));
}

size_t escape_terminal(const char *s, size_t len, char *buf, size_t size) {
        static const char named[][2] = {
                ['\a'] = "\\a", ['\b'] = "\\b", ['\t'] = "\\t", ['\n'] = "\\n",
                ['\v'] = "\\v", ['\f'] = "\\f", ['\r'] = "\\r",
        };
        Out o = { .buf = buf, .size = size };

        for (size_t i = 0; i < len;) {
                const unsigned char *u = (const unsigned char *) s + i;
                size_t n = utf8_char_len(s + i, len - i);

                if (n == 1 && *u == '\\')
                        put(&o, "\\\\", 2);
                else if (n == 1 && *u < sizeof(named) / sizeof(named[0]) && named[*u][0])
                        put(&o, named[*u], 2);
                else if (n == 1 && (*u < 0x20 || *u == 0x7f))
                        put_hex(&o, *u);
                else if (n == 0 || shown_escaped(u, n)) {
                        n = n ?: 1;
                        for (size_t k = 0; k < n; k++)
                                put_hex(&o, u[k]);
                } else
                        put(&o, u, n);
                i += n;
        }
        return finish(&o);
}

size_t escape_json(const char *s, size_t len, char *buf, size_t size) {
        Out o = { .buf = buf, .size = size };

        for (size_t i = 0; i < len;) {
                size_t n = utf8_char_len(s + i, len - i);

                if (n == 0 || (n == 1 && s[i] == '\0')) {
                        put(&o, "\xef\xbf\xbd", 3); /* U+FFFD */
                        n = 1;
                } else
                        put(&o, s + i, n);
                i += n;
        }
        return finish(&o);
}

static char *dup_with(size_t (*escape)(const char *, size_t, char *, size_t), const char *s) {
        size_t len, need;
        char *buf;

        if (!s)
                return NULL;
        len = strlen(s);
        need = escape(s, len, NULL, 0);
        buf = malloc(need + 1);
        if (buf)
                (void) escape(s, len, buf, need + 1);
        return buf;
}

char *escape_terminal_dup(const char *s) {
        return dup_with(escape_terminal, s);
}

char *escape_json_dup(const char *s) {
        return dup_with(escape_json, s);
}
