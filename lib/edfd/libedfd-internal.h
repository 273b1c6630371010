/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the parts of libedfd share and no application sees: the handle's insides, the error
 * helpers and the call helpers. Nothing here is exported (libedfd.sym). */

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-bus.h>

#include "edfd/edfd.h"

struct edfd {
        sd_bus *bus;
        pid_t pid;                    /* the process that opened the handle */
        unsigned generation;          /* the fork generation it was opened in (edfd_begin()) */
        char *error_name;             /* of the last failed call; NULL: local or none */
        char *error_message;          /* "" after a success */
        /* events (libedfd-event.c) */
        edfd_event_handler handler;
        void *userdata;
        sd_bus_slot *match_signals, *match_owner, *match_disconnected;
        bool disconnected;
        int handler_result;           /* a handler's negative return, ending edfd_process() */
        int delivered;                /* events delivered by the current edfd_process() */
};

/* Start a call on e: -EINVAL for NULL, -ECHILD in a child of the process that opened it, else 0
 * with the last error cleared. */
/* This process and thread, cached (reset in a fork child). */
pid_t edfd_self_pid(void);
pid_t edfd_self_tid(void);
int edfd_begin(edfd *e);
/* Record a local failure (no error name) with a printf-style message; returns r (negative). */
__attribute__((format(printf, 3, 4))) int edfd_fail(edfd *e, int r, const char *fmt, ...);
/* Record a failed bus call: error as sd-bus returned it (may be unset, then r is the local errno),
 * what names the call. Returns the negative errno the failure means (libedfd(3)). */
int edfd_fail_bus(edfd *e, const sd_bus_error *error, int r, const char *what);
/* The failure a method error reply means (as edfd_fail_bus()). */
int edfd_fail_reply(edfd *e, sd_bus_message *reply, const char *what);
/* Call method on edfd's object (types/... as sd_bus_message_append()); the reply in *ret_reply
 * (may be NULL) on success. awake: wait for the reply without sleeping (libedfd.c). Returns 0 or
 * the negative errno of edfd_fail_bus(). */
int edfd_call(edfd *e, const char *method, bool awake, sd_bus_message **ret_reply, const char *types, ...);
/* edfd_call() in two steps, for a call whose arguments varargs cannot carry (arrays): a new call
 * of method, then send it (the caller still owns call). Both return 0 or as edfd_call(). */
int edfd_call_new(edfd *e, const char *method, sd_bus_message **ret);
int edfd_call_send(edfd *e, sd_bus_message *call, const char *method, bool awake, sd_bus_message **ret_reply);
/* A reply that does not parse: records it and returns r. */
int edfd_fail_parse(edfd *e, int r, const char *what);

/* Read an a{sv} into the struct at base: each key of map with the type map gives is stored at its
 * offset, every other key or type skipped (edfd adds keys without changing signatures). */
typedef struct edfd_dict_field {
        const char *name;
        char type;
        size_t offset;
} edfd_dict_field;
int edfd_read_dict(sd_bus_message *m, const edfd_dict_field *map, size_t n_map, void *base);
