/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The peer of `edfctl admit -t` and `edfctl release`: a minimal one-shot sd-bus client that connects,
 * makes one call and exits, with no argument parsing to speak of and no output formatting.
 *
 *   bench-oneshot admit PID TID     Admit(PID, TID, "", 1 ms, 100 ms, 100 ms, 0), prints the id
 *   bench-oneshot release ID        Release(ID) */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "shared/protocol.h"

int main(int argc, char *argv[]) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        sd_bus *bus = NULL;
        uint64_t id;
        int r;

        if (argc < 3 || (strcmp(argv[1], "admit") == 0 && argc < 4)) {
                fprintf(stderr, "usage: bench-oneshot admit PID TID | release ID\n");
                return 2;
        }
        r = sd_bus_open_system(&bus);
        if (r < 0) {
                fprintf(stderr, "bench-oneshot: cannot connect: %s\n", strerror(-r));
                return 3;
        }
        if (strcmp(argv[1], "admit") == 0) {
                r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Admit", &error, &reply,
                                       "uustttt", (uint32_t) strtoul(argv[2], NULL, 10),
                                       (uint32_t) strtoul(argv[3], NULL, 10), "",
                                       UINT64_C(1000000), UINT64_C(100000000), UINT64_C(100000000), UINT64_C(0));
                if (r >= 0)
                        r = sd_bus_message_read(reply, "t", &id);
                if (r >= 0)
                        printf("%" PRIu64 "\n", id);
        } else
                r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Release", &error, NULL,
                                       "t", strtoull(argv[2], NULL, 10));
        if (r < 0)
                fprintf(stderr, "bench-oneshot: %s\n", error.message ? error.message : strerror(-r));
        sd_bus_message_unref(reply);
        sd_bus_error_free(&error);
        sd_bus_flush_close_unref(bus);
        return r < 0;
}
