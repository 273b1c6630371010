/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Request rate limits, as rtkit has them: at most `max` requests in a window of `window` ns; a
 * window opens at the first request after the previous one closed. Time is an input, so the rule
 * is testable without clocks. */

#include <stdbool.h>
#include <stdint.h>

typedef struct RateWindow {
        uint64_t start;  /* when the current window opened */
        uint64_t count;  /* requests in it */
        bool open;
} RateWindow;

/* Count a request at time now and return true, or return false when the window is full (the
 * request is not counted). max == 0 or window == 0 means no limit. */
bool rate_window_allow(RateWindow *w, uint64_t now, uint64_t max, uint64_t window);
