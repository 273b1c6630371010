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

#include "basic/hashmap.h"
#include "core/tree.h"

typedef struct Caller {
        uid_t uid;
        pid_t pid;
} Caller;

typedef struct CredsCache {
        Hashmap by_name;  /* hash_string(unique name) -> CredsEntry chain */
        size_t n;
        uint64_t queries; /* round trips to the bus */
        sd_bus_slot *match; /* NameOwnerChanged, see authz_cache_attach() */
} CredsCache;

/* The sender of m, from the cache or the bus. 0, or negative errno (-EPERM for augmented creds). */
int authz_caller(CredsCache *c, sd_bus_message *m, Caller *ret);
/* Forget a unique name (it left the bus). */
void authz_forget(CredsCache *c, const char *unique_name);
/* Forget each unique name as it leaves bus: one NameOwnerChanged match for every name, owned by the
 * cache (not an sd_bus_track: that tells only when all of its names are gone, and a match per caller
 * would cost the bus an AddMatch for each). 0, or negative errno. */
int authz_cache_attach(CredsCache *c, sd_bus *bus);
/* Free the cache and its match. */
void authz_cache_done(CredsCache *c);

/* The uid owning process pid (from /proc/PID), or negative errno. */
int authz_process_owner(pid_t pid, uid_t *ret);

/* User names by uid. getpwuid_r may read /etc/passwd or ask NSS over a socket each time, and an
 * admission needs the name for the group's users: list and the per-user limits, so names are looked
 * up once and kept until authz_names_flush() (edfd flushes at every reload and resync, so a changed
 * user database is seen within a resync period). Only uids that called or own an admitted thread
 * are ever looked up, so the cache stays as small as the machine's set of users. */
typedef struct UserNames {
        Hashmap by_uid; /* uid + 1 -> char * (the name, or "uid N" when it has none) */
        uint64_t lookups; /* getpwuid_r calls made */
} UserNames;

/* The user name of uid, or "uid N" when it has none (or no memory to keep it). Never NULL; valid
 * until the next flush. */
const char *authz_user_name(UserNames *n, uid_t uid);
/* Forget every name. */
void authz_names_flush(UserNames *n);


/* polkit, asked asynchronously so that a slow polkit never blocks other callers.
 *
 * A handler calls authz_polkit_check() for its message and action. The first time, the query is
 * sent and 0 returned: the handler returns 1 without replying. When polkit answers, the handler is
 * called again with the same message; now the check returns the verdict: 1 allowed, or -EACCES
 * with *error set. Without polkit on the bus, `absent_allows` decides (the configuration's
 * polkit: auto allows admissions, required refuses them; manage actions are refused). */
typedef struct PolkitQuery PolkitQuery;
typedef struct PolkitRegistry {
        PolkitQuery *queries;
        unsigned in_flight;  /* CheckAuthorization calls waiting for polkit */
        uint64_t asked;      /* CheckAuthorization calls made */
} PolkitRegistry;

/* At most this many calls wait for polkit at once (dbus-daemon allows 128 pending replies per
 * connection); later queries wait in edfd's queue instead of failing. */
#define POLKIT_IN_FLIGHT_MAX 64
/* At most this many queries of one caller uid wait (sent or queued): a burst from one user cannot
 * starve the others. */
#define POLKIT_PER_UID_MAX 16

/* absent_why: the refusal's message when polkit is not on the bus and !absent_allows. uid: the
 * caller's, for the per-uid cap (-EBUSY with *error set beyond it). */
int authz_polkit_check(PolkitRegistry *reg, sd_bus_message *msg, uid_t uid, const char *action, bool absent_allows,
                       const char *absent_why, sd_bus_message_handler_t handler, void *userdata,
                       sd_bus_error *error);
/* Whether polkit has been or is being asked about msg: the handler runs again for it, and must not
 * count the request a second time (rate limits). */
bool authz_polkit_known(const PolkitRegistry *reg, const sd_bus_message *msg);
/* Drop every pending query (at exit). */
void authz_polkit_done(PolkitRegistry *reg);
