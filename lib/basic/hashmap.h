/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* An open-addressing hash map from a non-zero uint64_t key to a pointer, with linear probing and
 * backward-shift deletion (no tombstones), so lookups stay short after any number of removals.
 * The map never owns its values; hashmap_done_free() frees them with the owner's function. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct HashmapEntry {
        uint64_t key; /* 0 = empty slot */
        void *value;
} HashmapEntry;

typedef struct Hashmap {
        HashmapEntry *slots;
        size_t n_slots; /* power of two, or 0 */
        size_t n_items;
} Hashmap;

#define HASHMAP_INIT { NULL, 0, 0 }

/* Where an iteration stands. Start from HASHMAP_ITER_INIT. */
typedef struct HashmapIter {
        size_t slot;
} HashmapIter;

#define HASHMAP_ITER_INIT { 0 }

/* Insert or replace key -> value. Returns 0, -EINVAL for key 0, -ENOMEM. */
int hashmap_put(Hashmap *m, uint64_t key, void *value);
/* Reserve room for n items so that later puts of up to n items cannot fail. 0 or -ENOMEM. */
int hashmap_reserve(Hashmap *m, size_t n);
/* The value for key, or NULL. */
void *hashmap_get(const Hashmap *m, uint64_t key);
/* Remove key; returns its value or NULL when absent. Never fails. */
void *hashmap_remove(Hashmap *m, uint64_t key);
/* The next item of the iteration at *i: true with its key and value in *ret_key and *ret_value
 * (each may be NULL), false when every item has been met. Items come in slot order, each once, as
 * long as the map is not changed during the iteration (no put of a new key, no remove; replacing
 * the value of the current key with hashmap_put() is fine). */
bool hashmap_iterate(const Hashmap *m, HashmapIter *i, uint64_t *ret_key, void **ret_value);
/* for each value of map (value: a pointer variable declared by the caller; iter: a name for the
 * loop's HashmapIter). The same rules as hashmap_iterate(). */
#define HASHMAP_FOREACH(value, map, iter)                                                          \
        for (HashmapIter iter = HASHMAP_ITER_INIT; hashmap_iterate((map), &iter, NULL, (void **) &(value));)
/* The same with the key too (key: a uint64_t variable). */
#define HASHMAP_FOREACH_KEY(value, key, map, iter)                                                 \
        for (HashmapIter iter = HASHMAP_ITER_INIT; hashmap_iterate((map), &iter, &(key), (void **) &(value));)

/* Free the slots (not the values). */
void hashmap_done(Hashmap *m);
/* Call free_value (if not NULL) on every value that is not NULL, then free the slots: for a map
 * that owns its values. The map is empty and reusable afterwards, as after hashmap_done(). */
void hashmap_done_free(Hashmap *m, void (*free_value)(void *value));
/* Bytes the map allocated. */
size_t hashmap_memory(const Hashmap *m);
/* Mix a 64-bit integer (splitmix64 finaliser); never returns 0 for a non-zero input's use as key. */
uint64_t hash_u64(uint64_t x);
/* 64-bit FNV-1a of a string, never 0. */
uint64_t hash_string(const char *s);
