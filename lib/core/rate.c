/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "core/rate.h"

bool rate_window_allow(RateWindow *w, uint64_t now, uint64_t max, uint64_t window) {
        if (max == 0 || window == 0)
                return true;
        /* now - start without overflow; a clock that went backwards opens a new window too. */
        if (!w->open || now < w->start || now - w->start >= window) {
                w->start = now;
                w->count = 0;
                w->open = true;
        }
        if (w->count >= max)
                return false;
        w->count++;
        return true;
}
