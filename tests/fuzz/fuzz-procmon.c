/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: procmon_decode() over arbitrary datagrams.
 *
 * The first input byte picks the sender (mostly the kernel's proc group, so that the decoder gets
 * past its first check) and the size of the events array; the rest is the datagram, copied into a
 * heap block of exactly its size so that ASan catches any read past the end. Checked besides the
 * sanitizers: ret_n is written only on success, never exceeds max, every event is FORK, EXEC or EXIT,
 * and an EXEC carries no parent. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "procmon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const struct sockaddr_nl senders[4] = {
                { .nl_family = AF_NETLINK, .nl_pid = 0, .nl_groups = 1 },
                { .nl_family = AF_NETLINK, .nl_pid = 0, .nl_groups = 1 },
                { .nl_family = AF_NETLINK, .nl_pid = 0, .nl_groups = 1 },
                { .nl_family = AF_NETLINK, .nl_pid = 4242, .nl_groups = 1 },
        };
        ProcEvent events[16];
        ProcmonStats stats = {};
        size_t max, n = SIZE_MAX;
        uint8_t *buf;
        int r;

        if (size < 1)
                return 0;
        max = (data[0] >> 2) % (sizeof(events) / sizeof(events[0]) + 1);
        buf = malloc(size - 1 ? size - 1 : 1);
        if (!buf)
                return 0;
        memcpy(buf, data + 1, size - 1);

        r = procmon_decode_full(buf, size - 1, &senders[data[0] & 3], events, max, &n, &stats);
        if (r == 0) {
                if (n > max)
                        abort();
                for (size_t i = 0; i < n; i++) {
                        if (events[i].type != PROCMON_FORK && events[i].type != PROCMON_EXIT &&
                            events[i].type != PROCMON_EXEC)
                                abort();
                        if (events[i].type == PROCMON_EXEC &&
                            (events[i].parent_pid | events[i].parent_tgid | (pid_t) events[i].exit_code) != 0)
                                abort();
                }
                if (stats.events != n)
                        abort();
        } else {
                if (n != SIZE_MAX)
                        abort();
                if (r != -EBADMSG && r != -ENOBUFS && r != -ENOSPC)
                        abort();
        }

        free(buf);
        return 0;
}
