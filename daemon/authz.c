/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "authz.h"
#include "macro.h"

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

void authz_cache_done(CredsCache *c) {
        for (size_t i = 0; i < c->by_name.n_slots; i++)
                for (CredsEntry *e = c->by_name.slots[i].value, *n; c->by_name.slots[i].key && e; e = n) {
                        n = e->next;
                        free(e->name);
                        free(e);
                }
        hashmap_done(&c->by_name);
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

bool authz_group_allows(const Group *g, uid_t uid) {
        struct passwd pw, *res = NULL;
        char buf[1024];

        if (uid == 0 || !g->users)
                return true;
        if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) != 0 || !res)
                return false;
        for (char **u = g->users; *u; u++)
                if (strcmp(*u, res->pw_name) == 0)
                        return true;
        return false;
}
