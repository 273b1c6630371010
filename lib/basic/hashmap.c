/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "basic/hashmap.h"
#include "basic/macro.h"

#define HASHMAP_MIN_SLOTS 16

uint64_t hash_u64(uint64_t x) {
        x += UINT64_C(0x9e3779b97f4a7c15);
        x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
        return x ^ (x >> 31);
}

uint64_t hash_string(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (; *s; s++) {
                h ^= (unsigned char) *s;
                h *= UINT64_C(0x100000001b3);
        }
        return h ? h : 1;
}

static size_t slot_of(const Hashmap *m, uint64_t key) {
        return (size_t) hash_u64(key) & (m->n_slots - 1);
}

static int hashmap_resize(Hashmap *m, size_t n_slots) {
        HashmapEntry *old = m->slots;
        size_t old_n = m->n_slots;

        m->slots = calloc(n_slots, sizeof(HashmapEntry));
        if (!m->slots) {
                m->slots = old;
                return -ENOMEM;
        }
        m->n_slots = n_slots;
        for (size_t i = 0; i < old_n; i++) {
                if (old[i].key == 0)
                        continue;
                size_t j = slot_of(m, old[i].key);
                while (m->slots[j].key != 0)
                        j = (j + 1) & (n_slots - 1);
                m->slots[j] = old[i];
        }
        free(old);
        return 0;
}

int hashmap_reserve(Hashmap *m, size_t n) {
        size_t want = HASHMAP_MIN_SLOTS;

        /* Keep the load factor at or below 4/5: linear probing with a good mix stays short there, and
         * the books stay small (see tree_memory()). */
        if (n > SIZE_MAX / 4)
                return -ENOMEM;
        while (want / 5 * 4 < n)
                want *= 2;
        if (want <= m->n_slots)
                return 0;
        return hashmap_resize(m, want);
}

int hashmap_put(Hashmap *m, uint64_t key, void *value) {
        size_t i;
        int r;

        if (key == 0)
                return -EINVAL;
        if (m->n_slots > 0) {
                for (i = slot_of(m, key); m->slots[i].key != 0; i = (i + 1) & (m->n_slots - 1))
                        if (m->slots[i].key == key) {
                                m->slots[i].value = value;
                                return 0;
                        }
        }
        r = hashmap_reserve(m, m->n_items + 1);
        if (r < 0)
                return r;
        for (i = slot_of(m, key); m->slots[i].key != 0; i = (i + 1) & (m->n_slots - 1))
                ;
        m->slots[i] = (HashmapEntry) { key, value };
        m->n_items++;
        return 0;
}

void *hashmap_get(const Hashmap *m, uint64_t key) {
        if (key == 0 || m->n_slots == 0)
                return NULL;
        for (size_t i = slot_of(m, key); m->slots[i].key != 0; i = (i + 1) & (m->n_slots - 1))
                if (m->slots[i].key == key)
                        return m->slots[i].value;
        return NULL;
}

void *hashmap_remove(Hashmap *m, uint64_t key) {
        size_t mask = m->n_slots - 1, i, j;
        void *value;

        if (key == 0 || m->n_slots == 0)
                return NULL;
        for (i = slot_of(m, key); m->slots[i].key != key; i = (i + 1) & mask)
                if (m->slots[i].key == 0)
                        return NULL;
        value = m->slots[i].value;

        /* Backward-shift deletion: move later members of the probe run into the hole when their
         * home slot does not lie cyclically in (hole, their slot]. */
        for (j = (i + 1) & mask; m->slots[j].key != 0; j = (j + 1) & mask) {
                size_t home = slot_of(m, m->slots[j].key);
                bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
                if (stays)
                        continue;
                m->slots[i] = m->slots[j];
                i = j;
        }
        m->slots[i] = (HashmapEntry) { 0, NULL };
        m->n_items--;
        return value;
}

bool hashmap_iterate(const Hashmap *m, HashmapIter *i, uint64_t *ret_key, void **ret_value) {
        for (; i->slot < m->n_slots; i->slot++) {
                const HashmapEntry *e = &m->slots[i->slot];

                if (e->key == 0)
                        continue;
                i->slot++;
                if (ret_key)
                        *ret_key = e->key;
                if (ret_value)
                        *ret_value = e->value;
                return true;
        }
        return false;
}

void hashmap_done_free(Hashmap *m, void (*free_value)(void *value)) {
        if (free_value)
                for (size_t i = 0; i < m->n_slots; i++)
                        if (m->slots[i].key != 0 && m->slots[i].value)
                                free_value(m->slots[i].value);
        hashmap_done(m);
}

void hashmap_done(Hashmap *m) {
        free(m->slots);
        *m = (Hashmap) HASHMAP_INIT;
}

size_t hashmap_memory(const Hashmap *m) {
        return m->n_slots * sizeof(HashmapEntry);
}
