/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* authz: who is calling, and may they do this.
 *
 * Caller credentials come from the bus (sd_bus_query_sender_creds). On Debian 12's dbus-daemon a
 * message carries no credentials, so each query is a round trip to the bus; they are cached per
 * unique bus name (a connection's peer credentials never change) and dropped when the name goes.
 * Credentials that sd-bus could only read from /proc ("augmented") are never used to authorize. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "hashmap.h"
#include "tree.h"

typedef struct Caller {
        uid_t uid;
        pid_t pid;
} Caller;

typedef struct CredsCache {
        Hashmap by_name;  /* hash_string(unique name) -> CredsEntry chain */
        size_t n;
        uint64_t queries; /* round trips to the bus */
} CredsCache;

/* The sender of m, from the cache or the bus. 0, or negative errno (-EPERM for augmented creds). */
int authz_caller(CredsCache *c, sd_bus_message *m, Caller *ret);
/* Forget a unique name (it left the bus). */
void authz_forget(CredsCache *c, const char *unique_name);
/* Free the cache. */
void authz_cache_done(CredsCache *c);

/* The uid owning process pid (from /proc/PID), or negative errno. */
int authz_process_owner(pid_t pid, uid_t *ret);

/* Whether uid may use group g (its users: list; NULL means anyone). Root always may. */
bool authz_group_allows(const Group *g, uid_t uid);
