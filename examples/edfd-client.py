#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A client of edfd's D-Bus API in Python, with Debian's python3-dbus (dbus-python): the contract
as documented in org.edfd.Admission1(5), used by an implementation of D-Bus that is not sd-bus.

    edfd-client.py admit PID RUNTIME PERIOD [GROUP]   admit process PID's main thread; prints the id
    edfd-client.py list                              one line per reservation
    edfd-client.py groups                            one line per group: path, bandwidth, allocated
    edfd-client.py release ID                        end reservation ID

Times are nanoseconds. The system bus is DBUS_SYSTEM_BUS_ADDRESS when set. Exit status: 0 done,
1 edfd refused (the D-Bus error name and edfd's message on stderr), 2 bad arguments.
"""

import sys

import dbus

NAME = "org.edfd.Admission1"
PATH = "/org/edfd/Admission1"
MANAGER = "org.edfd.Admission1.Manager"
BW_UNIT = 1 << 20  # bandwidths are fractions of one CPU in the kernel's fixed point


def manager():
    bus = dbus.SystemBus()
    return dbus.Interface(bus.get_object(NAME, PATH, introspect=False), MANAGER)


def percent(bw):
    return "unlimited" if bw == 2**64 - 1 else "%.2f%%" % (100.0 * bw / BW_UNIT)


def admit(m, pid, runtime, period, group=""):
    # Admit(pid, tid, group, runtime, deadline, period, flags) -> id; deadline 0 means the period.
    rid = m.Admit(dbus.UInt32(pid), dbus.UInt32(pid), group, dbus.UInt64(runtime), dbus.UInt64(0),
                  dbus.UInt64(period), dbus.UInt64(0))
    print("admitted %d" % rid)


def list_reservations(m):
    for (rid, pid, tid, group, runtime, deadline, period, bw, flags, split_from, uid,
         extra) in m.ListReservations():
        cpu = (" cpu %d" % extra["cpu"]) if "cpu" in extra else ""
        print("%d pid %d tid %d group %s runtime %d deadline %d period %d bandwidth %s%s"
              % (rid, pid, tid, group, runtime, deadline, period, percent(bw), cpu))


def list_groups(m):
    for g in m.ListGroups():
        print("%s bandwidth %s allocated %s" % (g[0], percent(g[3]), percent(g[4])))


def main(argv):
    try:
        if len(argv) >= 4 and argv[0] == "admit" and len(argv) <= 5:
            args = [int(a, 10) for a in argv[1:4]]
            if min(args) <= 0:
                raise ValueError("PID, RUNTIME and PERIOD must be positive")
            action = lambda m: admit(m, *args, *(argv[4:]))
        elif argv == ["list"]:
            action = list_reservations
        elif argv == ["groups"]:
            action = list_groups
        elif len(argv) == 2 and argv[0] == "release":
            rid = int(argv[1], 10)
            action = lambda m: m.Release(dbus.UInt64(rid))
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
    except ValueError as e:
        print("edfd-client.py: %s" % e, file=sys.stderr)
        return 2
    try:
        action(manager())
    except dbus.exceptions.DBusException as e:
        print("edfd-client.py: %s: %s" % (e.get_dbus_name(), e.get_dbus_message()), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
