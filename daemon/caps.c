/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The capability adapter: capget(2) and capset(2) on the process (version 3: two 32-bit words per
 * set), PR_CAPBSET_DROP for the bounding set. See caps.h. */

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps.h"

static int get(struct __user_cap_data_struct d[2]) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };

        return syscall(SYS_capget, &h, d) < 0 ? -errno : 0;
}

static int set(struct __user_cap_data_struct d[2]) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };

        return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

static void clear(uint32_t *lo, uint32_t *hi, uint64_t mask) {
        *lo &= ~(uint32_t) mask;
        *hi &= ~(uint32_t) (mask >> 32);
}

int caps_drop(uint64_t mask, bool only_effective) {
        struct __user_cap_data_struct d[2];
        int r = get(d);

        if (r < 0)
                return r;
        clear(&d[0].effective, &d[1].effective, mask);
        if (!only_effective) {
                clear(&d[0].permitted, &d[1].permitted, mask);
                clear(&d[0].inheritable, &d[1].inheritable, mask);
        }
        return set(d);
}

int caps_raise(uint64_t mask) {
        struct __user_cap_data_struct d[2];
        int r = get(d);

        if (r < 0)
                return r;
        d[0].effective |= (uint32_t) mask & d[0].permitted;
        d[1].effective |= (uint32_t) (mask >> 32) & d[1].permitted;
        return set(d);
}

int caps_drop_bounding(uint64_t mask) {
        int r = 0;

        for (unsigned cap = 0; cap < 64; cap++) {
                if (!(mask & CAPS_BIT(cap)))
                        continue;
                if (prctl(PR_CAPBSET_READ, (unsigned long) cap, 0, 0, 0) <= 0)
                        continue; /* not there, or a capability this kernel does not know */
                if (prctl(PR_CAPBSET_DROP, (unsigned long) cap, 0, 0, 0) < 0 && r == 0)
                        r = -errno;
        }
        return r;
}
