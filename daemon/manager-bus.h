/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The bus half of the manager (manager-bus.c): the vtable and its handlers, and the state only it
 * needs, in its own ManagerBus: the callers' credentials, the polkit queries, the subscribers (an
 * sd_bus_track), the signals held back until a reply has gone out, and the post source that drains
 * the bus. The manager calls it only through the functions below. */

#include <stdbool.h>
#include <stdint.h>

#include "core/tree.h"

typedef struct Manager Manager;

/* Create m->bus_half (no bus needed yet). 0, or negative errno. */
int manager_bus_new(Manager *m);
/* Free m->bus_half: pending polkit queries, held signals (unsent), the subscribers' track, the
 * credentials. Before m->bus is closed. NULL-safe. */
void manager_bus_free(Manager *m);

/* On m->bus: the object and its vtable, and the credentials' NameOwnerChanged match (the
 * subscribers' track is made at the first Subscribe()). 0, or negative errno. */
int manager_bus_register(Manager *m);
/* Attach m->bus to m->event, with the post source that drains it. 0, or negative errno. */
int manager_bus_attach(Manager *m);

/* Hold the signals emitted from now until the matching manager_bus_defer_end(), which sends them
 * (in order, after whatever was sent meanwhile: the reply). Scopes nest; the queue has no bound. */
void manager_bus_defer_begin(Manager *m);
void manager_bus_defer_end(Manager *m);

/* The signals: sent only while someone is subscribed, held while a deferral scope is open. */
void manager_bus_emit_added(Manager *m, const Reservation *r, const char *reason);
void manager_bus_emit_removed(Manager *m, uint64_t id, uint32_t pid, uint32_t tid, const char *group,
                              const char *reason);
void manager_bus_emit_changed(Manager *m, const Reservation *r, const char *reason);
void manager_bus_emit_split(Manager *m, uint64_t donor, uint64_t child);
void manager_bus_emit_groups_changed(Manager *m);
/* ReservationThrottled(t id, u pid, u tid, t throttles): r's count grew to throttles. */
void manager_bus_emit_throttled(Manager *m, const Reservation *r, uint64_t throttles);
/* ReservationLockWaits(t id, u pid, u tid, t lock_waits): r's possible lock waits grew to lock_waits. */
void manager_bus_emit_lock_waits(Manager *m, const Reservation *r, uint64_t lock_waits);
/* Whether anyone is subscribed (a signal would go out). */
bool manager_bus_subscribed(const Manager *m);
