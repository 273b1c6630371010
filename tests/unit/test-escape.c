/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* escape_terminal() and escape_json(): every kind of byte a hostile name can hold, and the cut at
 * the buffer's end. */

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "basic/escape.h"
#include "basic/macro.h"

typedef struct Case {
        const char *what;
        const char *in;
        size_t len;          /* 0: strlen(in) */
        const char *tty;     /* escape_terminal() */
        const char *json;    /* escape_json() */
} Case;

#define FFFD "\xef\xbf\xbd"

static const Case cases[] = {
        { "empty", "", 0, "", "" },
        { "plain ASCII", "audio/pipewire-1", 0, "audio/pipewire-1", "audio/pipewire-1" },
        { "blanks and quotes", "a b\"c'", 0, "a b\"c'", "a b\"c'" },
        { "a backslash is doubled for a terminal", "a\\x41", 0, "a\\\\x41", "a\\x41" },
        { "named control bytes", "\a\b\t\n\v\f\r", 0, "\\a\\b\\t\\n\\v\\f\\r", "\a\b\t\n\v\f\r" },
        { "other control bytes", "\x01\x1f", 0, "\\x01\\x1f", "\x01\x1f" },
        { "ESC starting a colour", "\x1b[31mred", 0, "\\x1b[31mred", "\x1b[31mred" },
        { "an OSC title sequence", "\x1b]0;owned\x07", 0, "\\x1b]0;owned\\a", "\x1b]0;owned\x07" },
        { "DEL", "a\x7f", 0, "a\\x7f", "a\x7f" },
        { "a NUL inside the length", "a\0b", 3, "a\\x00b", "a" FFFD "b" },
        { "valid two-byte UTF-8", "caf\xc3\xa9", 0, "caf\xc3\xa9", "caf\xc3\xa9" },
        { "valid three-byte UTF-8", "\xe2\x82\xac" "5", 0, "\xe2\x82\xac" "5", "\xe2\x82\xac" "5" },
        { "valid four-byte UTF-8", "\xf0\x9f\x8e\xb5", 0, "\xf0\x9f\x8e\xb5", "\xf0\x9f\x8e\xb5" },
        { "U+10FFFF, the last code point", "\xf4\x8f\xbf\xbf", 0, "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf" },
        { "U+FFFD itself", FFFD, 0, FFFD, FFFD },
        { "a stray continuation byte", "a\x80z", 0, "a\\x80z", "a" FFFD "z" },
        { "a lone lead byte", "\xc3z", 0, "\\xc3z", FFFD "z" },
        { "a sequence cut by the end", "ab\xe2\x82", 0, "ab\\xe2\\x82", "ab" FFFD FFFD },
        { "a four-byte sequence cut by the end", "\xf0\x9f\x8e", 0, "\\xf0\\x9f\\x8e", FFFD FFFD FFFD },
        { "overlong two-byte form of /", "\xc0\xaf", 0, "\\xc0\\xaf", FFFD FFFD },
        { "overlong three-byte form", "\xe0\x80\xaf", 0, "\\xe0\\x80\\xaf", FFFD FFFD FFFD },
        { "overlong four-byte form", "\xf0\x82\x82\xac", 0, "\\xf0\\x82\\x82\\xac", FFFD FFFD FFFD FFFD },
        { "a surrogate", "\xed\xa0\x80", 0, "\\xed\\xa0\\x80", FFFD FFFD FFFD },
        { "above U+10FFFF", "\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80", FFFD FFFD FFFD FFFD },
        { "F5..FF never start a character", "\xf5\xff", 0, "\\xf5\\xff", FFFD FFFD },
        { "Latin-1, not UTF-8", "Gr\xfc\xdf", 0, "Gr\\xfc\\xdf", "Gr" FFFD FFFD },
        { "C1 CSI (U+009B) is obeyed by some terminals", "a\xc2\x9b" "2J", 0, "a\\xc2\\x9b2J", "a\xc2\x9b" "2J" },
        { "U+00A0 is printable", "\xc2\xa0", 0, "\xc2\xa0", "\xc2\xa0" },
        { "a right-to-left override", "x\xe2\x80\xaey", 0, "x\\xe2\\x80\\xaey", "x\xe2\x80\xaey" },
        { "a bidirectional isolate", "\xe2\x81\xa6", 0, "\\xe2\\x81\\xa6", "\xe2\x81\xa6" },
        { "U+2029 is not a bidi control", "\xe2\x80\xa9", 0, "\xe2\x80\xa9", "\xe2\x80\xa9" },
};

Test(escape, table) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const Case *c = &cases[i];
                size_t len = c->len ?: strlen(c->in);
                char buf[256];

                cr_assert_eq(escape_terminal(c->in, len, buf, sizeof(buf)), strlen(c->tty), "%s", c->what);
                cr_assert_str_eq(buf, c->tty, "%s", c->what);
                cr_assert_eq(escape_json(c->in, len, buf, sizeof(buf)), strlen(c->json), "%s", c->what);
                cr_assert_str_eq(buf, c->json, "%s", c->what);
                cr_assert_leq(strlen(c->tty), ESCAPE_MAX(len), "%s", c->what);
                cr_assert_leq(strlen(c->json), ESCAPE_MAX(len), "%s", c->what);
                if (!c->len) {
                        _cleanup_free_ char *t = escape_terminal_dup(c->in), *j = escape_json_dup(c->in);
                        cr_assert_str_eq(t, c->tty, "%s", c->what);
                        cr_assert_str_eq(j, c->json, "%s", c->what);
                }
        }
}

/* Every terminal result is printable ASCII or valid UTF-8 without controls; every JSON result is
 * valid UTF-8: over all two-byte inputs. */
Test(escape, all_byte_pairs) {
        for (unsigned a = 0; a < 256; a++)
                for (unsigned b = 0; b < 256; b++) {
                        const char in[2] = { (char) a, (char) b };
                        char t[16], j[16];

                        escape_terminal(in, 2, t, sizeof(t));
                        escape_json(in, 2, j, sizeof(j));
                        for (size_t i = 0; t[i];) {
                                size_t n = utf8_char_len(t + i, strlen(t + i));
                                cr_assert_gt(n, 0, "%02x %02x: %s", a, b, t);
                                cr_assert(n > 1 || (t[i] >= 0x20 && t[i] < 0x7f), "%02x %02x: %s", a, b, t);
                                i += n;
                        }
                        for (size_t i = 0; j[i];) {
                                size_t n = utf8_char_len(j + i, strlen(j + i));
                                cr_assert_gt(n, 0, "%02x %02x", a, b);
                                i += n;
                        }
                }
}

Test(escape, cut) {
        char buf[8];

        /* "ab\x1b": a, b, then \x1b (4 bytes) does not fit in 5 - 1: cut before it, never inside. */
        cr_assert_eq(escape_terminal("ab\x1b" "c", 4, buf, 5), 7);
        cr_assert_str_eq(buf, "ab");
        cr_assert_eq(escape_terminal("ab\x1b" "c", 4, buf, 7), 7);
        cr_assert_str_eq(buf, "ab\\x1b");
        cr_assert_eq(escape_terminal("ab\x1b" "c", 4, buf, 8), 7);
        cr_assert_str_eq(buf, "ab\\x1bc");
        /* A character is not cut either, nor is anything put after a piece that did not fit. */
        cr_assert_eq(escape_json("a\xe2\x82\xac" "b", 5, buf, 4), 5);
        cr_assert_str_eq(buf, "a");
        cr_assert_eq(escape_json("\x80" "b", 2, buf, 3), 4);
        cr_assert_str_eq(buf, "");
        /* Size 0 writes nothing (buf may be NULL) and still tells the length. */
        cr_assert_eq(escape_terminal("\x01", 1, NULL, 0), 4);
        cr_assert_eq(escape_json("\x01", 1, NULL, 0), 1);
        cr_assert_null(escape_terminal_dup(NULL));
        cr_assert_null(escape_json_dup(NULL));
}

Test(escape, utf8_char_len) {
        cr_assert_eq(utf8_char_len("", 0), 0);
        cr_assert_eq(utf8_char_len("\0", 1), 1);
        cr_assert_eq(utf8_char_len("\xc3\xa9", 2), 2);
        cr_assert_eq(utf8_char_len("\xc3\xa9", 1), 0, "the length bounds the read");
        cr_assert_eq(utf8_char_len("\xef\xbf\xbf", 3), 3, "U+FFFF is a code point");
        cr_assert_eq(utf8_char_len("\xf0\x90\x80\x80", 4), 4, "U+10000");
        cr_assert_eq(utf8_char_len("\xf0\x8f\xbf\xbf", 4), 0, "overlong U+FFFF");
        cr_assert_eq(utf8_char_len("\xe0\x9f\xbf", 3), 0, "overlong U+07FF");
        cr_assert_eq(utf8_char_len("\xed\x9f\xbf", 3), 3, "U+D7FF, just below the surrogates");
        cr_assert_eq(utf8_char_len("\xed\xbf\xbf", 3), 0, "U+DFFF, a surrogate");
        cr_assert_eq(utf8_char_len("\xee\x80\x80", 3), 3, "U+E000, just above them");
        cr_assert_eq(utf8_char_len("\xc3\x28", 2), 0, "a continuation that is not one");
}
