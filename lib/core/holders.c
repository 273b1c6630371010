/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "basic/macro.h"
#include "core/bandwidth.h"
#include "core/holders.h"

/* Whether a ranks before b: more bandwidth, then the lower tid. */
static int holder_before(const Holder *a, const Holder *b) {
        return a->bw > b->bw || (a->bw == b->bw && a->tid < b->tid);
}

void holders_add(Holders *hs, const Holder *h) {
        size_t i;

        hs->n++;
        if (__builtin_add_overflow(hs->total_bw, h->bw, &hs->total_bw))
                hs->total_bw = UINT64_MAX;
        for (i = hs->n_top; i > 0 && holder_before(h, &hs->top[i - 1]); i--)
                ;
        if (i >= HOLDERS_MAX)
                return;
        if (hs->n_top < HOLDERS_MAX)
                hs->n_top++;
        memmove(&hs->top[i + 1], &hs->top[i], (hs->n_top - 1 - i) * sizeof hs->top[0]);
        hs->top[i] = *h;
        hs->top[i].comm[HOLDER_COMM_MAX] = 0;
}

/* snprintf at *off, advancing it, never past size. */
#define APPEND(buf, size, off, ...)                                                                         \
        do {                                                                                                \
                if (*(off) < (size)) {                                                                      \
                        int _k = snprintf((buf) + *(off), (size) - *(off), __VA_ARGS__);                    \
                        *(off) = _k < 0 ? (size) : MIN(*(off) + (size_t) _k, (size));                        \
                }                                                                                           \
        } while (0)

char *holders_format(const Holders *hs, char *buf, size_t size) {
        char p[DURATION_MAX];
        uint64_t rest;
        size_t off = 0;

        buf[0] = 0;
        if (hs->n == 0)
                return buf;
        rest = hs->total_bw;
        for (size_t i = 0; i < hs->n_top; i++) {
                const Holder *h = &hs->top[i];
                if (i > 0)
                        APPEND(buf, size, &off, ", ");
                if (h->tid == h->pid)
                        APPEND(buf, size, &off, "pid %" PRIu32, h->pid);
                else
                        APPEND(buf, size, &off, "thread %" PRIu32 " of pid %" PRIu32, h->tid, h->pid);
                APPEND(buf, size, &off, " (%s) holds %s", h->comm, bw_format(h->bw, p));
                rest = rest >= h->bw ? rest - h->bw : 0;
        }
        if (hs->n > hs->n_top)
                APPEND(buf, size, &off, " and %zu more hold%s %s", hs->n - hs->n_top,
                       hs->n - hs->n_top == 1 ? "s" : "", bw_format(rest, p));
        APPEND(buf, size, &off, " outside edfd");
        return buf;
}

char *holders_format_ended(uint64_t back_in_ns, char *buf, size_t size) {
        if (back_in_ns == 0)
                snprintf(buf, size, "not held by any thread edfd can see; see docs/design.md");
        else
                /* Rounded up: "within 1 ms" rather than "within 0 ms". */
                snprintf(buf, size,
                         "most likely still held for deadline threads that ended (the kernel gives it back at their "
                         "0-lag time): expected back within %" PRIu64 " ms",
                         back_in_ns / 1000000 + (back_in_ns % 1000000 != 0));
        return buf;
}
