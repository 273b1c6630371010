/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The on-disk state that lets a restarted daemon re-adopt its reservations.
 *
 * One file, STATE_DIR/state: a versioned header line and then one line per change, so recording a
 * change costs the same however many reservations exist. The journal is mapped (MAP_SHARED) with
 * room allocated ahead (fallocate), and a line is appended by storing it, newline last: no system
 * call on the path of an admission or a release, and in the file (the page cache) at once, so
 * kill -9 loses nothing. Where the file system cannot allocate ahead, lines are written with
 * pwrite(2) instead. A clean stop cuts the room off; a killed edfd leaves it as NUL bytes after
 * the last line, which the next load cuts off. Every line ends in a checksum of itself, so a line
 * torn by a crash in the middle of its write is recognised (only the last line can be torn: it is
 * ignored, the change it described was never answered). When the journal has grown to several
 * times what it describes, it is rewritten as a snapshot into a temporary file and renamed over
 * the old one (atomic), and appending continues there: amortised O(1) per change. The file is
 * edfd's alone while it runs: truncating it under a running edfd kills it (SIGBUS), like any
 * program whose mapped file shrinks; the lock below keeps other edfds out.
 *
 * Record types:
 *   A  a reservation as it is now (admitted, adopted, updated, split): the full record
 *      "A id pid tid uid identity group runtime deadline period flags donor donated [cpu]", the
 *      CPU only for a reservation of partitioned placement (older journals have none)
 *   I  an intent: the kernel is about to be changed to match this record. Settled on restart by
 *      asking the kernel which of the intent and the last A record it shows. edfd changes a
 *      reservation again only after its last change took effect, and a change that failed is
 *      followed by R, or by A of what the kernel kept: so an I after an unsettled I of the same
 *      reservation says the earlier one took effect. An admission writes no A after its I (one
 *      write fewer on the hot path): until the reservation's next record the I stands for it.
 *   R  a reservation ended
 *   G  a group created over D-Bus (dynamic), or its new bandwidth: "G path runtime period [users=A,B]",
 *      the last field only for a group made with its own users: list (CreateGroupWithUsers; "users="
 *      alone: root only), the whole list each time; without it the group has its parent's
 *   O  an override of a configured group's bandwidth (SetGroup), until the next reload
 *   D  a dynamic group removed, or an override dropped
 *   P  where a process moved whole into the v2 partitions came from (below)
 *   W  an admission waiting for its program's start (AdmitAtStart), as it is now: the whole watch
 *      (below), written at the call and again when the exec is seen
 *   X  that watch ended (admitted, refused, dropped, its process gone): "X pid"
 *
 * Versions (the header's number): 1 (edfd 0.1.0) has every record above but P, W, X and G's users
 * field, except that development builds of 0.2.0 up to b770680 wrote P into version-1 files too; 2
 * adds P; 3 adds W, X and G's users field. Every
 * version up to STATE_VERSION is read, all the same way, and a file of an older version is marked
 * STATE_VERSION before anything is appended to it. A newer version is not read (the reason names
 * both versions) and is kept aside as below, like any file this edfd cannot vouch for. An older
 * reader knows nothing it can skip (an unknown record, or a version not its own, makes the whole
 * file unreadable), so a record type that an older reader must not meet needs a new version.
 *
 * A file that cannot be read (bad header, a version below 1 or above STATE_VERSION, a bad checksum
 * before the last line, an unknown record, a malformed one) is renamed to state.corrupt-<time> for inspection, or to
 * state.corrupt-<time>-<n> when that name is taken (a kept file is never replaced), and the daemon
 * starts from what the kernel shows: records depend on each other (an I settles the one before
 * it, an R ends what an A began), so none is dropped alone. One daemon per state directory:
 * STATE_DIR/lock is held with flock(2). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/params.h"
#include "core/tree.h"

#define STATE_VERSION 3

typedef struct StateRecord {
        uint64_t id;
        uint32_t pid, tid, uid;
        uint64_t identity;
        char group[GROUP_PATH_MAX + 1];
        DlParams params;
        uint64_t flags;
        uint64_t donor;
        uint64_t donated;
        bool partitioned;       /* a 14th field, the CPU, only when partitioned */
        uint32_t cpu;
} StateRecord;

typedef struct StateEntry {
        bool has_committed, has_intent;
        StateRecord committed;  /* the last A record */
        StateRecord intent;     /* an I record after it, not yet settled */
} StateEntry;

/* A group's own users: list holds at most STATE_USERS_MAX names of at most STATE_USER_NAME_MAX bytes,
 * each of [A-Za-z0-9_.-] (a final $ allowed): what edfd accepts (manager-groups.c, conf.h). */
#define STATE_USERS_MAX 64
#define STATE_USER_NAME_MAX 256

typedef struct StateGroup {
        char path[GROUP_PATH_MAX + 1];
        uint64_t runtime, period;
        bool override;          /* O: a configured group's bandwidth, not a dynamic group */
        char **users;           /* a dynamic group's own users: list (NULL-terminated; empty: root only),
                                 * or NULL: its parent's. Owned by the StateLoaded that holds it; borrowed
                                 * by state_rewrite() */
} StateGroup;

/* An admission waiting for its program's start (manager-startup.c): "W pid start-time exe-dev exe-ino
 * uid caller-pid may-move flags group runtime deadline period bound called expire exec switches",
 * the times CLOCK_MONOTONIC ns (one clock for the whole boot: a restarted edfd reads them as its
 * own; /run does not outlive a boot), exec 0 until the exec is seen, switches the voluntary switches
 * at the exec plus one (0: unknown). */
typedef struct StateWatch {
        uint32_t pid;
        uint64_t start_time;            /* /proc start time: a reused pid is another process */
        uint64_t exe_dev, exe_ino;      /* /proc/PID/exe at the call */
        uint32_t uid, caller_pid;       /* the caller */
        bool may_move;
        uint64_t flags;
        char group[GROUP_PATH_MAX + 1]; /* the group decided at the call */
        DlParams params;
        uint64_t bound_ns, called_ns, expire_ns, exec_ns;
        int64_t base_switches;          /* -1: unknown */
} StateWatch;

/* v2 partitions: the cgroup a process moved whole into edfd-partitions came from (a P record), so
 * that after a restart a release still puts it back there and a stopped service still ends it.
 * The path is kept escaped in the journal (every byte outside [A-Za-z0-9/._@+:=,~-] as %XX); one
 * whose escaped form is longer than STATE_ORIGIN_MAX is not kept. A path is what the kernel names a
 * cgroup by, below the cgroup2 mount: "/" (the root cgroup), or "/" and names joined by "/", none
 * empty, "." or "..", none holding a control byte (0x01-0x1f, 0x7f), and not inside edfd's own
 * edfd-partitions (a process is recorded only when it moves in from outside). Any other is never
 * written, and read as a malformed record. */
#define STATE_ORIGIN_MAX 400
typedef struct StateOrigin {
        uint32_t pid;
        char path[STATE_ORIGIN_MAX + 1]; /* unescaped: at most as long as the escaped form */
} StateOrigin;

typedef struct StateLoaded {
        StateEntry *entries;    /* in id order */
        size_t n_entries;
        StateGroup *groups;     /* in creation order (parents before children) */
        size_t n_groups;
        StateOrigin *origins;   /* the newest per pid, in no order: the caller keeps those of its live pids */
        size_t n_origins;
        StateWatch *watches;    /* the last W of each pid without an X after it, in no order */
        size_t n_watches;
        uint64_t next_id;
        bool torn_tail;         /* the last line was incomplete and ignored */
        char *corrupt_path;     /* set when the file was unreadable and moved here */
        char *corrupt_reason;
        unsigned version;       /* the version of the file read, also one moved aside (0: there was none) */
} StateLoaded;

typedef struct State State;

/* Create dir if needed, take its lock and open the journal for appending. -EBUSY when another
 * process holds the lock, other negative errno on failure. */
int state_open(State **ret, const char *dir);
/* Close (cutting the room allocated ahead off the journal) and unlock. Accepts NULL, returns
 * NULL. */
State *state_free(State *s);

/* Read what the journal describes, cut off what follows its last complete line (a torn line, room
 * allocated ahead) and open it for appending. A corrupt file is moved aside (ret->corrupt_path
 * says where) and an empty state returned; that is not an error. Negative errno on I/O errors
 * only. */
int state_load(State *s, StateLoaded *ret);
void state_loaded_done(StateLoaded *l);

/* Append one record: in the file when this returns, readable by the next edfd whatever happens to
 * this one. 0 or negative errno (the caller must then undo the change it describes). */
int state_write_reservation(State *s, bool intent, const StateRecord *r);
int state_write_release(State *s, uint64_t id);
/* users: a dynamic group's own users: list, or NULL (see StateGroup); -EINVAL for a bad path, or a
 * list longer or with names other than StateGroup allows. */
int state_write_group(State *s, bool override, const char *path, uint64_t runtime, uint64_t period,
                      char *const *users);
int state_write_group_removed(State *s, const char *path);
/* Where process pid came from (an absolute cgroup path below the mount); a newer record for the
 * same pid replaces it. -EINVAL for a path that is not one as above, -ENAMETOOLONG when its escaped
 * form is longer than STATE_ORIGIN_MAX (nothing written either way). */
int state_write_origin(State *s, uint32_t pid, const char *path);

/* An admission waiting for its start, as it is now (a newer W of the same pid replaces it), and its
 * end. -EINVAL for a watch with an invalid group path or pid 0. */
int state_write_watch(State *s, const StateWatch *w);
int state_write_watch_end(State *s, uint32_t pid);

/* Rewrite the journal as a snapshot of exactly these records, groups, origins and watches (atomic
 * rename). */
int state_rewrite(State *s, const StateRecord *records, size_t n_records, const StateGroup *groups,
                  size_t n_groups, const StateOrigin *origins, size_t n_origins, const StateWatch *watches,
                  size_t n_watches, uint64_t next_id);
/* Whether the journal has grown enough, against `live` current records, to be worth a rewrite. */
bool state_wants_rewrite(const State *s, size_t live);

/* Fill a StateRecord from a reservation. */
void state_record_from(StateRecord *ret, const Reservation *r);
