/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The one YAML reader of edfd, edfctl and edfd-oci-hook: libyaml's events loaded from a buffer into
 * a small tree of nodes (scalars, mappings, sequences), each with its line and column, bounded
 * while it is built. The daemon's configuration (daemon/conf.c), edfctl plan's task sets
 * (client/plan-file.c) and the OCI hook's configuration (oci/oci-parse.c) each walk that tree
 * with their own schema; the YAML they read is one dialect:
 *
 * - one document of UTF-8 text (a BOM is skipped; UTF-16 and a second "---" are refused);
 * - no anchors, aliases or tags: each is reported (with its name) and does not stop the load, so
 *   a walker that collects errors goes on; an alias becomes a node marked `broken` that walkers
 *   skip silently (it was reported);
 * - mappings and sequences at most YamlLimits.nesting_max deep, checked as the tree is built, so
 *   that neither libyaml (which scans lazily) nor a walker nor ytree_free() ever sees more of a
 *   "[[[[..." input than that; at most YamlLimits.nodes_max nodes when that is not 0, so that the
 *   tree of a small schema stays small whatever the file holds.
 *
 * A syntax error stops the load; it is reported once, in words a user can act on (an unterminated
 * quote names where it opened, a tab says YAML indents with spaces). Every problem goes to the
 * caller's YamlReportFn with its position and the key path that leads to it. No I/O: the buffer
 * is the caller's, who read it. */

#include <stdbool.h>
#include <stddef.h>

typedef enum YNodeType {
        YNODE_SCALAR,
        YNODE_MAP,
        YNODE_SEQ,
} YNodeType;

typedef struct YNode YNode;
struct YNode {
        YNodeType type;
        bool plain;            /* a scalar written without quotes: may be a null or a boolean */
        bool broken;           /* an alias, already reported: walkers skip it silently */
        bool skip;             /* free for a walker (conf.c marks keys it reported as duplicates) */
        unsigned line, column; /* 1-based */
        YNode **items;         /* mapping: key, value, key, value...; sequence: the items */
        size_t n, allocated;
        size_t len;            /* scalar */
        char value[];          /* scalar, NUL-terminated (may hold NULs of its own: ytree_text() checks) */
};

typedef enum YamlProblem {
        YAML_PROBLEM_SYNTAX,  /* not YAML (or not UTF-8): the load stopped */
        YAML_PROBLEM_REFUSED, /* an anchor, alias or tag: reported, the load went on */
        YAML_PROBLEM_FORMAT,  /* UTF-16, a second document: the load stopped */
        YAML_PROBLEM_LIMIT,   /* nested too deep, too many nodes: the load stopped */
} YamlProblem;

/* One problem at line:column (both 0 when it has no position), under keypath (the keys that lead
 * to it, each shown with ytree_show() and joined by "."; "" at the top), in words (message). */
typedef void (*YamlReportFn)(void *userdata, YamlProblem kind, unsigned line, unsigned column, const char *keypath,
                             const char *message);

typedef struct YamlLimits {
        size_t nesting_max; /* mappings and sequences inside each other (at least 1) */
        size_t nodes_max;   /* nodes in all, 0: no limit beyond the buffer's size */
} YamlLimits;

/* Load the one document of buf[0..len) (need not be NUL-terminated; NULL with 0 is empty). Returns
 * 0 with the root in *ret_root (NULL for an empty stream) after reporting every anchor, alias and
 * tag (the caller's report function knows whether there were any); -EINVAL after reporting why the
 * text cannot be read at all (*ret_root untouched); -ENOMEM. */
int ytree_load(const char *buf, size_t len, const YamlLimits *limits, YamlReportFn report, void *userdata,
               YNode **ret_root);
/* Free n and everything below it. Accepts NULL. */
void ytree_free(YNode *n);

/* "a mapping", "a sequence", "a single value": for messages. */
const char *ytree_kind(const YNode *n);
/* A plain empty, ~, null, Null or NULL scalar. */
bool ytree_is_null(const YNode *n);
/* The text of scalar n, or NULL for another kind of node, a broken one or one that holds a NUL. */
const char *ytree_text(const YNode *n);

/* At most YTREE_SHOW_MAX bytes of s[0..len) for a message, quotes, backslashes and control
 * characters escaped (\" \\ \n \t \xHH), never cutting a UTF-8 character, "..." after a cut.
 * Returns buf. */
#define YTREE_SHOW_MAX 64
#define YTREE_SHOW_BUF (YTREE_SHOW_MAX * 4 + 4)
const char *ytree_show(const char *s, size_t len, char buf[static YTREE_SHOW_BUF]);
/* parts[0..n) shown with ytree_show() and joined by "." into buf (size bytes, cut to fit). */
void ytree_keypath(const char *const *parts, size_t n, char *buf, size_t size);
