/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/sched-attr.h"

_Static_assert(sizeof(SchedAttr) == 56, "SCHED_ATTR_SIZE_VER1");

int sched_setattr_raw(pid_t tid, const SchedAttr *attr, unsigned flags) {
        if (!attr)
                return -EINVAL;
        if (syscall(SYS_sched_setattr, tid, attr, flags) < 0)
                return -errno;
        return 0;
}

int sched_getattr_raw(pid_t tid, SchedAttr *attr, unsigned flags) {
        SchedAttr a = {};

        if (!attr)
                return -EINVAL;
        if (syscall(SYS_sched_getattr, tid, &a, (unsigned) sizeof(a), flags) < 0)
                return -errno;
        a.size = sizeof(a);
        *attr = a;
        return 0;
}
