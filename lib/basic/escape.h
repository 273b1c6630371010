/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Text that comes from users or other processes (task, group and command names, a thread's comm,
 * annotations) made safe to print. Pure: no I/O, no policy. One helper for every output of edfctl
 * and edfd-oci-hook, so that a name looks the same everywhere.
 *
 * For a terminal (or a log line), escape_terminal(): printable ASCII is kept except the backslash,
 * written \\ (so the escaping can be undone without ambiguity); \t \n \r \a \b \f \v are written
 * so; every other byte below 0x20 (ESC is \x1b), DEL (\x7f) and every byte that is not part of
 * valid UTF-8 (a stray continuation byte, a lead byte without its continuation, an overlong form,
 * a surrogate, a code point above U+10FFFF, a sequence cut by the end of the text) is written
 * \xHH, one escape per byte. Valid multibyte characters are kept, except the C1 controls
 * (U+0080..U+009F, which some terminals obey as ESC sequences) and the bidirectional embeddings,
 * overrides and isolates (U+202A..U+202E, U+2066..U+2069, which reorder what follows them on the
 * line): their bytes are written \xHH as well.
 *
 * For a JSON string, escape_json(): valid UTF-8 is kept exactly, and each byte that is not part
 * of valid UTF-8 (the same rule) becomes U+FFFD, the replacement character. The result is valid
 * UTF-8; the JSON writer still escapes quotes and control characters. Names that are valid UTF-8
 * (all the names edfd itself accepts are) come out unchanged; a consumer that needs the raw bytes
 * of another name cannot get them from JSON.
 *
 * Both read s[0..len) (NUL bytes included: escape_terminal() writes \x00, escape_json() U+FFFD)
 * and write at most size - 1 bytes and a NUL to buf (nothing when size is 0), never cutting an
 * escape or a character; they return the length of the whole result (without the NUL), as
 * snprintf() does: the result was cut when the return value is >= size. */

#include <stddef.h>

/* The longest result for len bytes of input (\xHH, or U+FFFD: 3 bytes, per byte), NUL excluded. */
#define ESCAPE_MAX(len) (4 * (len))

size_t escape_terminal(const char *s, size_t len, char *buf, size_t size);
size_t escape_json(const char *s, size_t len, char *buf, size_t size);

/* The same for a NUL-terminated s, into a new string. NULL without memory (or for s NULL). */
char *escape_terminal_dup(const char *s);
char *escape_json_dup(const char *s);

/* The length of the valid UTF-8 character at s[0..len): 1..4, or 0 when s does not start with one
 * (len 0 included). ASCII, NUL included, is a character of length 1. */
size_t utf8_char_len(const char *s, size_t len);
