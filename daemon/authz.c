/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "authz.h"
#include "basic/macro.h"

typedef struct CredsEntry {
        char *name;
        Caller caller;
        struct CredsEntry *next;
} CredsEntry;

static CredsEntry *cache_find(CredsCache *c, const char *name) {
        for (CredsEntry *e = hashmap_get(&c->by_name, hash_string(name)); e; e = e->next)
                if (strcmp(e->name, name) == 0)
                        return e;
        return NULL;
}

int authz_caller(CredsCache *c, sd_bus_message *m, Caller *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        const char *sender = sd_bus_message_get_sender(m);
        CredsEntry *e;
        uint64_t aug;
        uid_t uid;
        pid_t pid;
        int r;

        if (sender) {
                e = cache_find(c, sender);
                if (e) {
                        *ret = e->caller;
                        return 0;
                }
        }
        r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID | SD_BUS_CREDS_AUGMENT, &creds);
        if (r < 0)
                return r;
        c->queries++;
        aug = sd_bus_creds_get_augmented_mask(creds);
        if (aug & (SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID))
                return -EPERM;
        r = sd_bus_creds_get_euid(creds, &uid);
        if (r < 0)
                return r;
        r = sd_bus_creds_get_pid(creds, &pid);
        if (r < 0)
                return r;
        if (sender) {
                e = calloc(1, sizeof(CredsEntry));
                if (e) {
                        e->name = strdup(sender);
                        e->caller = (Caller) { uid, pid };
                        e->next = hashmap_get(&c->by_name, hash_string(sender));
                        if (!e->name || hashmap_put(&c->by_name, hash_string(sender), e) < 0) {
                                free(e->name);
                                free(e);
                        } else
                                c->n++;
                }
        }
        *ret = (Caller) { uid, pid };
        return 0;
}

void authz_forget(CredsCache *c, const char *name) {
        uint64_t h = hash_string(name);
        CredsEntry *head = hashmap_get(&c->by_name, h), **p;

        for (p = &head; *p; p = &(*p)->next)
                if (strcmp((*p)->name, name) == 0) {
                        CredsEntry *e = *p;
                        *p = e->next;
                        free(e->name);
                        free(e);
                        c->n--;
                        break;
                }
        if (head)
                (void) hashmap_put(&c->by_name, h, head); /* replaces: cannot fail */
        else
                hashmap_remove(&c->by_name, h);
}

static int on_name_owner_changed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        CredsCache *c = userdata;
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(msg, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        if (name[0] == ':' && new_owner[0] == '\0')
                authz_forget(c, name);
        return 0;
}

int authz_cache_attach(CredsCache *c, sd_bus *bus) {
        c->match = sd_bus_slot_unref(c->match);
        return sd_bus_match_signal(bus, &c->match, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                   "org.freedesktop.DBus", "NameOwnerChanged", on_name_owner_changed, c);
}

/* A hashmap value of by_name: the chain of entries whose names share a hash. */
static void creds_chain_free(void *p) {
        for (CredsEntry *e = p, *n; e; e = n) {
                n = e->next;
                free(e->name);
                free(e);
        }
}

void authz_cache_done(CredsCache *c) {
        c->match = sd_bus_slot_unref(c->match);
        hashmap_done_free(&c->by_name, creds_chain_free);
        c->n = 0;
}

int authz_process_owner(pid_t pid, uid_t *ret) {
        char path[32];
        struct stat st;

        snprintf(path, sizeof path, "/proc/%d", (int) pid);
        if (stat(path, &st) < 0)
                return -errno;
        *ret = st.st_uid;
        return 0;
}

/* "uid N" for a uid without a name: never equal to a user name in a users: list (conf.c accepts only
 * names that are valid user names, which hold no space). */
#define NO_NAME_FORMAT "uid %u"

const char *authz_user_name(UserNames *n, uid_t uid) {
        /* Room for a name the lookup failed to keep: per thread, like strerror's. */
        static _Thread_local char fallback[sizeof NO_NAME_FORMAT + 10];
        struct passwd pw, *res = NULL;
        char tmp[1024], *name;

        name = hashmap_get(&n->by_uid, (uint64_t) uid + 1);
        if (name)
                return name;
        n->lookups++;
        if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res)
                name = strdup(res->pw_name);
        else if (asprintf(&name, NO_NAME_FORMAT, (unsigned) uid) < 0)
                name = NULL;
        if (name && hashmap_put(&n->by_uid, (uint64_t) uid + 1, name) == 0)
                return name;
        free(name);
        if (res)
                snprintf(fallback, sizeof fallback, "%s", res->pw_name);
        else
                snprintf(fallback, sizeof fallback, NO_NAME_FORMAT, (unsigned) uid);
        return fallback;
}

void authz_names_flush(UserNames *n) {
        hashmap_done_free(&n->by_uid, free);
}

/* --- polkit --- */

struct PolkitQuery {
        PolkitRegistry *reg;
        sd_bus_message *request;      /* the method call being authorized */
        uid_t uid;
        char *action;
        char *absent_why;
        sd_bus_message *call;         /* the CheckAuthorization, while queued */
        sd_bus_slot *slot;            /* the pending CheckAuthorization */
        sd_bus_message_handler_t handler;
        void *userdata;
        bool absent_allows;
        int verdict;                  /* -1 pending, 0 denied, 1 allowed */
        bool absent;                  /* polkit is not on the bus */
        char *denied_why;
        PolkitQuery *next;
};

static void query_free(PolkitQuery *q) {
        if (q->slot)
                q->reg->in_flight--;
        sd_bus_slot_unref(q->slot);
        sd_bus_message_unref(q->call);
        free(q->absent_why);
        sd_bus_message_unref(q->request);
        free(q->action);
        free(q->denied_why);
        free(q);
}

static int on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error);

/* Send queued queries while there is room. */
static void send_queued(PolkitRegistry *reg) {
        for (PolkitQuery **p = &reg->queries; *p && reg->in_flight < POLKIT_IN_FLIGHT_MAX;) {
                PolkitQuery *q = *p;
                if (!q->call) {
                        p = &q->next;
                        continue;
                }
                if (sd_bus_call_async(sd_bus_message_get_bus(q->call), &q->slot, q->call, on_polkit_reply, q, 0) < 0) {
                        /* Nothing will call back: answer the request here. */
                        (void) sd_bus_reply_method_errorf(q->request, "org.edfd.Admission1.Error.PermissionDenied",
                                                          "polkit could not be asked");
                        *p = q->next;
                        query_free(q);
                        continue;
                }
                q->call = sd_bus_message_unref(q->call);
                reg->in_flight++;
                reg->asked++;
                p = &q->next;
        }
}

static int on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        PolkitQuery *q = userdata;
        const sd_bus_error *e;
        int authorized = 0, challenge = 0, r;

        q->slot = sd_bus_slot_unref(q->slot);
        q->reg->in_flight--;
        e = sd_bus_message_get_error(reply);
        if (e) {
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
                        q->absent = true;
                        q->verdict = q->absent_allows;
                } else {
                        q->verdict = 0;
                        (void) asprintf(&q->denied_why, "polkit failed: %s", e->message ? e->message : e->name);
                }
        } else {
                r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
                if (r >= 0)
                        r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
                q->verdict = r >= 0 && authorized;
                if (r < 0)
                        (void) asprintf(&q->denied_why, "polkit answered something unreadable");
                else if (!authorized && challenge)
                        (void) asprintf(&q->denied_why, "polkit wants authentication for %s (use an interactive client)",
                                        q->action);
        }

        /* Run the handler again: it finds the verdict and replies. */
        sd_bus_message_rewind(q->request, true);
        r = q->handler(q->request, q->userdata, &error);
        if (r < 0 || sd_bus_error_is_set(&error)) {
                if (!sd_bus_error_is_set(&error))
                        sd_bus_error_set_errno(&error, r);
                (void) sd_bus_reply_method_error(q->request, &error);
        }
        /* Verdicts stay while another query for the same request is still out (a handler may ask
         * for two actions); once none is, the request is answered and its verdicts go. */
        PolkitRegistry *reg = q->reg;
        sd_bus_message *request = q->request;
        send_queued(reg);
        for (PolkitQuery *i = reg->queries; i; i = i->next)
                if (i->request == request && i->verdict < 0)
                        return 0;
        for (PolkitQuery **p = &reg->queries; *p;) {
                PolkitQuery *i = *p;
                if (i->request == request) {
                        *p = i->next;
                        query_free(i);
                } else
                        p = &i->next;
        }
        return 0;
}

bool authz_polkit_known(const PolkitRegistry *reg, const sd_bus_message *msg) {
        for (const PolkitQuery *q = reg->queries; q; q = q->next)
                if (q->request == msg)
                        return true;
        return false;
}

int authz_polkit_check(PolkitRegistry *reg, sd_bus_message *msg, uid_t uid, const char *action, bool absent_allows,
                       const char *absent_why, sd_bus_message_handler_t handler, void *userdata,
                       sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        const char *sender = sd_bus_message_get_sender(msg);
        unsigned mine = 0;
        PolkitQuery *q;
        int r;

        for (q = reg->queries; q; q = q->next)
                if (q->request == msg && strcmp(q->action, action) == 0 && q->verdict >= 0) {
                        int verdict = q->verdict;
                        bool absent = q->absent;
                        if (!verdict)
                                sd_bus_error_setf(error, "org.edfd.Admission1.Error.PermissionDenied", "%s",
                                                  q->denied_why ? q->denied_why
                                                  : absent      ? (q->absent_why ? q->absent_why : "polkit is not running")
                                                                : "polkit does not allow this");
                        return verdict ? 1 : -EACCES;
                }
        if (!sender)
                return sd_bus_error_set(error, "org.edfd.Admission1.Error.PermissionDenied", "no sender to ask polkit about"),
                       -EACCES;

        for (q = reg->queries; q; q = q->next)
                if (q->uid == uid && q->verdict < 0)
                        mine++;
        if (mine >= POLKIT_PER_UID_MAX)
                return sd_bus_error_setf(error, "org.edfd.Admission1.Error.LimitExceeded",
                                         "%u of your requests already wait for polkit; try again later", mine),
                       -EBUSY;

        q = calloc(1, sizeof(PolkitQuery));
        if (!q)
                return -ENOMEM;
        q->reg = reg;
        q->uid = uid;
        q->request = sd_bus_message_ref(msg);
        q->action = strdup(action);
        q->absent_why = absent_why ? strdup(absent_why) : NULL;
        q->handler = handler;
        q->userdata = userdata;
        q->absent_allows = absent_allows;
        q->verdict = -1;
        if (!q->action) {
                query_free(q);
                return -ENOMEM;
        }
        r = sd_bus_message_new_method_call(sd_bus_message_get_bus(msg), &call, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(call, "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s", sender, action, 0,
                                          sd_bus_message_get_allow_interactive_authorization(msg) ? 1 : 0, "");
        if (r < 0) {
                query_free(q);
                return r;
        }
        /* Queue at the end (first come, first asked), then send what fits. */
        q->call = TAKE_PTR(call);
        PolkitQuery **tail = &reg->queries;
        while (*tail)
                tail = &(*tail)->next;
        *tail = q;
        send_queued(reg);
        return 0;
}

void authz_polkit_done(PolkitRegistry *reg) {
        while (reg->queries) {
                PolkitQuery *q = reg->queries;
                reg->queries = q->next;
                query_free(q);
        }
}
