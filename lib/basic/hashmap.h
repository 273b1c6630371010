/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* An open-addressing hash map from a non-zero uint64_t key to a pointer, with linear probing and
 * backward-shift deletion (no tombstones), so lookups stay short after any number of removals.
 * The map never owns its values. */

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

/* Insert or replace key -> value. Returns 0, -EINVAL for key 0, -ENOMEM. */
int hashmap_put(Hashmap *m, uint64_t key, void *value);
/* Reserve room for n items so that later puts of up to n items cannot fail. 0 or -ENOMEM. */
int hashmap_reserve(Hashmap *m, size_t n);
/* The value for key, or NULL. */
void *hashmap_get(const Hashmap *m, uint64_t key);
/* Remove key; returns its value or NULL when absent. Never fails. */
void *hashmap_remove(Hashmap *m, uint64_t key);
/* Free the slots (not the values). */
void hashmap_done(Hashmap *m);
/* Bytes the map allocated. */
size_t hashmap_memory(const Hashmap *m);
/* Mix a 64-bit integer (splitmix64 finaliser); never returns 0 for a non-zero input's use as key. */
uint64_t hash_u64(uint64_t x);
/* 64-bit FNV-1a of a string, never 0. */
uint64_t hash_string(const char *s);
