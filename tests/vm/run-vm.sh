#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# edfd on a real system: a qemu virtual machine with one of Debian 12's kernels, systemd as PID 1,
# pure cgroup v2, the real system bus and polkitd. Reports TAP.
#
# Run it alone, as root, from the top of the source tree:
#
#   tests/vm/run-vm.sh                     (6.1; or: meson test -C build vm-6.1 -v)
#   EDFD_VM_KERNEL=6.12 tests/vm/run-vm.sh (or: meson test -C build vm-6.12 -v)
#   EDFD_VM_KERNEL=6.12-rt tests/vm/run-vm.sh (or: meson test -C build --suite vm-rt -v)
#   tests/vm/run-vm.sh SRCDIR GUEST-BUILDDIR
#
# `meson test -C build --suite vm` runs 6.1 and 6.12, as tools/test-all does.
#
# What it does:
#   1. builds edfd for the guest in GUEST-BUILDDIR (default SRCDIR/build-vm), configured with
#      --prefix=/usr --sysconfdir=/etc -Dtests=false so that the paths match the unit files;
#   2. fetches the kernel EDFD_VM_KERNEL names with `apt-get download` (never installed on the
#      host) through a private apt configuration in the cache (kernel.sh: its own sources list with
#      the host's Debian mirrors and $suite-backports, its own lists, cache and dpkg status; the
#      host's apt configuration is never changed), and makes a tiny initramfs (init.c) that loads
#      the modules the kernel needs to mount the root disk (virtio_blk on the cloud kernels; also
#      ext4 and crc32c on the -rt one, whose xz-compressed modules are unpacked on the host);
#   3. builds a minimal Debian root file system with debootstrap (systemd, dbus, polkitd and the
#      libraries the binaries link, found with ldd and dpkg -S) and caches it;
#   4. copies it, installs the build into the copy with `meson install --destdir`, adds the
#      scenario (scenario.sh as edfd-vm-test.service, its edfd.yaml, the partitioned phase's
#      edfd-vm-partitions.yaml, a polkit rule, cpuset-probe and tests/bench/periodic built against
#      the guest build's static libraries), enables edfd.service, and turns the tree into an ext4
#      image with mkfs.ext4 -d;
#   5. boots it under qemu-system-x86_64 (TCG), where the scenario prints TAP to the serial
#      console and powers off; a guest that runs longer than EDFD_VM_TIMEOUT seconds is killed;
#   6. prints the guest's results and fails unless every check passed, with the tail of the
#      serial log when something went wrong.
#
# Environment:
#   EDFD_VM_KERNEL   the guest's kernel: 6.1 (default; Debian 12's cloud kernel), 6.12 (Debian 12's
#                    newest linux-image-6.12.*-cloud-amd64, from its security or backports suite),
#                    6.12-rt (linux-image-6.12.*-rt-amd64, PREEMPT_RT); each is cached apart, and a
#                    newer version of the same kernel replaces the cached one
#   CI=true          a kernel that cannot be fetched fails the test instead of skipping it
#   EDFD_VM_CACHE    cache of the kernel and root file system (default $XDG_CACHE_HOME/edfd-vm,
#                    else /var/cache/edfd-vm); delete it to start afresh
#   EDFD_VM_MIRROR   Debian mirror for debootstrap and the kernels (default: the one the host's apt
#                    uses for $suite main, read from its sources.list and sources.list.d)
#   EDFD_VM_TIMEOUT  seconds the guest may run (default 600)
#   EDFD_VM_KEEP=1   keep the disk image and the staged tree in the cache's run/ directory
#
# Needs root, a Debian 12 host (the guest runs the host's build on Debian 12's libraries),
# qemu-system-x86 debootstrap e2fsprogs cpio and a C compiler with a static libc (EDFD_WITH_VM=1
# tools/setup-deps installs them). Without them, or when the kernel package cannot be fetched, it
# skips with the reason ("1..0 # SKIP ..."; under CI=true a kernel that cannot be fetched fails).
# The serial log of the last run of kernel K is GUEST-BUILDDIR/vm-serial-K.log; after a failure the
# guest's journal is in GUEST-BUILDDIR/vm-journal-K.
#
# Wall times on the 2-core development machine with the kernel and the root file system cached
# (2026-12-07, two runs each beside other load; boot, scenario and poweroff under TCG / the whole
# run): 6.1 209-217 s / 214-223 s, 6.12 198-296 s / 204-309 s, 6.12-rt 227-349 s / 234-355 s; a
# first run of a kernel adds its download (10-15 s here),
# a first run at all debootstrap (~60 s). The three kernels are about 15 minutes of CI's 90, beside
# the ~25 of the rest of tools/test-all, which is why CI runs all three.

set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${1:-$here/../..}" && pwd)
guest_build=${2:-$src/build-vm}
cache=${EDFD_VM_CACHE:-${XDG_CACHE_HOME:+$XDG_CACHE_HOME/edfd-vm}}
cache=${cache:-/var/cache/edfd-vm}
vm_timeout=${EDFD_VM_TIMEOUT:-600}
suite=bookworm

# shellcheck source=kernel.sh
. "$here/kernel.sh"
kernel_name=${EDFD_VM_KERNEL:-6.1}
mirror=${EDFD_VM_MIRROR:-$(host_mirror "$suite")}
# What the guest needs besides the libraries that ldd finds: libpam-systemd provides the logind
# that polkitd depends on (debootstrap does not resolve virtual packages).
base_packages=(systemd systemd-sysv dbus libpam-systemd polkitd util-linux procps)

unset MALLOC_PERTURB_ # meson test sets it; it only slows qemu and debootstrap down
t_start=$SECONDS
times=()

skip() {
        echo "1..0 # SKIP $*"
        exit 0
}

comment() {
        sed 's/^/# /'
}

# A failure before the guest could run: one failed check, the reason, the end of a log.
host_fail() { # what, why, [log]
        echo "not ok 1 - $1 # $2"
        [ -n "${3:-}" ] && [ -f "$3" ] && tail -40 "$3" | comment
        echo "1..1"
        exit 1
}

lap() { # name, start
        times+=("$1 $((SECONDS - $2))s")
}

# --- what the host needs ---

vm_kernel_spec "$kernel_name" || host_fail "kernel" "EDFD_VM_KERNEL=$kernel_name is not a kernel of the matrix (6.1, 6.12, 6.12-rt)"

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, and an image whose files belong to root)"
for tool in qemu-system-x86_64 debootstrap mkfs.ext4 cpio gzip xz zstd apt-get dpkg-deb ldd cc objcopy meson ninja; do
        command -v "$tool" >/dev/null || skip "$tool is not installed (EDFD_WITH_VM=1 tools/setup-deps installs what the VM test needs)"
done
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || skip "no static libc for the initramfs init (libc6-dev)"

mkdir -p "$cache" || host_fail "cache directory" "cannot create $cache"
exec 9>"$cache/lock"
flock -w 1800 9 || host_fail "cache lock" "another run holds $cache/lock"

# --- 1. the guest build ---

t=$SECONDS
build_log=$cache/build.log
guest_options=(-Dprefix=/usr -Dsysconfdir=/etc -Dlocalstatedir=/var -Dtests=false)
if [ ! -f "$guest_build/build.ninja" ]; then
        meson setup "$guest_build" "$src" "${guest_options[@]}" >"$build_log" 2>&1 ||
                host_fail "guest build" "meson setup failed" "$build_log"
else
        meson configure "$guest_build" "${guest_options[@]}" >"$build_log" 2>&1 ||
                host_fail "guest build" "meson configure failed" "$build_log"
fi
ninja -C "$guest_build" -j2 >>"$build_log" 2>&1 || host_fail "guest build" "ninja failed" "$build_log"
for bin in daemon/edfd client/edfctl; do
        [ -x "$guest_build/$bin" ] || host_fail "guest build" "$guest_build/$bin was not built" "$build_log"
done
# The cpuset adapter as a command (cpuset-probe.c), until edfd makes its partitions itself: linked
# against the guest build's static libraries and libcgroup's static one (no package more in the guest).
cc -O2 -Wall -Wextra -D_GNU_SOURCE -o "$guest_build/cpuset-probe" "$here/cpuset-probe.c" -I"$src/daemon" -I"$src/lib" \
        -I"$guest_build" "$guest_build/daemon/libedfd-adapters.a" "$guest_build/lib/core/libedfd-core.a" \
        "$guest_build/lib/basic/libedfd-basic.a" /usr/lib/x86_64-linux-gnu/libcgroup.a -lpthread \
        >>"$build_log" 2>&1 || host_fail "guest build" "cannot build cpuset-probe" "$build_log"
# The partitioned phase's workload, tests/bench/periodic.c (the guest build has no tests), linked the
# same way.
cc -O2 -Wall -Wextra -D_GNU_SOURCE -o "$guest_build/periodic" "$src/tests/bench/periodic.c" -I"$src/lib" \
        -I"$guest_build" "$guest_build/lib/core/libedfd-core.a" "$guest_build/lib/basic/libedfd-basic.a" -lpthread \
        >>"$build_log" 2>&1 || host_fail "guest build" "cannot build periodic" "$build_log"
lap "guest build" $t

# --- 2. the kernel ---

t=$SECONDS
# A kernel that cannot be had is a skip that says why, except under CI, where it fails: CI must
# run every kernel of its matrix.
unavailable() { # why
        [ "${CI:-}" = true ] && host_fail "kernel $kernel_name" "$1 (CI=true: a kernel of the matrix must run)"
        skip "kernel $kernel_name: $1"
}
# Without a mirror or package lists (offline), the newest cached version of the kernel serves.
if ! apt_private "$mirror"; then
        echo "# no Debian mirror for $suite main in the host's apt sources (EDFD_VM_MIRROR): the cached kernel, if any"
elif ! apt_private_update "$cache/apt/update.log"; then
        echo "# no package lists for $suite and $suite-backports (apt-get update: $cache/apt/update.log): the cached kernel, if any"
fi
kernel_fetch || unavailable "$why"

# The initramfs: the static init and the modules, numbered in load order.
work=$cache/run
rm -rf "$work"
mkdir -p "$work/initramfs/modules" "$work/initramfs/dev" "$work/modules"
cc -static -Os -Wall -Wextra -o "$work/initramfs/init" "$here/init.c" >"$work/cc.log" 2>&1 ||
        host_fail "initramfs" "cannot compile init.c statically" "$work/cc.log"
declare -A mod_seen=()
mod_order=()
mod_work=$work/modules
for m in "${kmodules[@]}"; do
        add_module "$m" || host_fail "initramfs" "$why"
done
i=10
for file in "${mod_order[@]}"; do
        cp "$file" "$work/initramfs/modules/$i-$(basename "$file")"
        i=$((i + 1))
done
(cd "$work/initramfs" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz" ||
        host_fail "initramfs" "cpio failed"
echo "# kernel $kernel_name: $kver ($kdir), initramfs modules: $(ls "$work/initramfs/modules" | tr '\n' ' ')"
lap "kernel and initramfs" $t

# --- 3. the root file system, cached ---

t=$SECONDS
# The packages of the libraries the binaries link.
lib_packages=$(for bin in daemon/edfd client/edfctl; do ldd "$guest_build/$bin"; done |
        awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
        while read -r lib; do
                dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null
        done | cut -d: -f1 | sort -u | tr '\n' ' ')
[ -n "$lib_packages" ] || host_fail "root file system" "cannot find the packages of the binaries' libraries (ldd, dpkg -S)"
packages=$(printf '%s\n' "${base_packages[@]}" $lib_packages | sort -u | paste -sd, -)

# Everything the guest needs in the cached tree, whatever the run: the users, a fixed machine id
# (an empty one would mean "first boot"), no timers that could start work during the scenario.
configure_rootfs() { # dir
        local root=$1 u
        chroot "$root" useradd --create-home --uid 1000 --user-group --shell /bin/bash edfdtest || return 1
        chroot "$root" useradd --create-home --uid 1001 --user-group --shell /bin/bash edfdother || return 1
        echo edfd-vm >"$root/etc/hostname"
        echo 0d5b6a3c1e2f4a5b8c9d0e1f2a3b4c5d >"$root/etc/machine-id"
        : >"$root/etc/fstab" # no udev, so no device units: the initramfs mounts the root
        for u in systemd-firstboot.service apt-daily.timer apt-daily-upgrade.timer fstrim.timer \
                 e2scrub_all.timer e2scrub_reap.service; do
                ln -sf /dev/null "$root/etc/systemd/system/$u"
        done
        rm -rf "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
}
key=$( { echo "$suite $mirror $packages"; declare -f configure_rootfs; } | sha256sum | cut -c1-16)
rootfs=$cache/rootfs-$key
rootfs_state=cached
if [ ! -d "$rootfs" ]; then
        rootfs_state=built
        echo "# building the root file system ($suite, $packages)"
        [ -n "$mirror" ] || skip "no Debian mirror for $suite main in the host's apt sources (set EDFD_VM_MIRROR)"
        rm -rf "$cache"/rootfs-*
        tmp=$cache/rootfs.tmp
        rm -rf "$tmp"
        if ! debootstrap --variant=minbase --include="$packages" "$suite" "$tmp" "$mirror" >"$cache/debootstrap.log" 2>&1; then
                [ -f "$tmp/debootstrap/debootstrap.log" ] && tail -30 "$tmp/debootstrap/debootstrap.log" >>"$cache/debootstrap.log"
                if grep -qE "Failed getting release file|Couldn't download" "$cache/debootstrap.log"; then
                        tail -5 "$cache/debootstrap.log" | comment
                        rm -rf "$tmp"
                        skip "debootstrap cannot download $suite from $mirror"
                fi
                host_fail "root file system" "debootstrap failed (log: $cache/debootstrap.log)" "$cache/debootstrap.log"
        fi
        configure_rootfs "$tmp" >>"$cache/debootstrap.log" 2>&1 ||
                host_fail "root file system" "configuring the tree failed" "$cache/debootstrap.log"
        mv "$tmp" "$rootfs"
fi
lap "root file system ($rootfs_state)" $t

# --- 4. the image: the cached tree, the build, the scenario ---

t=$SECONDS
stage=$work/root
cp -a "$rootfs" "$stage" || host_fail "image" "cannot copy $rootfs"
DESTDIR= meson install -C "$guest_build" --destdir "$stage" --no-rebuild >"$work/install.log" 2>&1 ||
        host_fail "image" "meson install --destdir failed" "$work/install.log"
for f in usr/sbin/edfd usr/bin/edfctl; do
        [ -x "$stage/$f" ] || host_fail "image" "meson install put no /$f in the image" "$work/install.log"
done
mkdir -p "$stage/var/log/journal" # persistent: read back from the image when the run fails
install -D -m 0644 "$here/edfd-vm.yaml" "$stage/etc/edfd/edfd.yaml"
install -D -m 0644 "$here/edfd-vm-test.rules" "$stage/etc/polkit-1/rules.d/50-edfd-vm-test.rules"
install -D -m 0755 "$here/scenario.sh" "$stage/usr/local/libexec/edfd-vm/scenario"
install -D -m 0755 "$guest_build/cpuset-probe" "$stage/usr/local/libexec/edfd-vm/cpuset-probe"
install -D -m 0755 "$guest_build/periodic" "$stage/usr/local/libexec/edfd-vm/periodic"
install -D -m 0644 "$here/edfd-vm-partitions.yaml" "$stage/usr/local/share/edfd-vm/edfd-partitions.yaml"
install -D -m 0644 "$here/edfd-vm-test.service" "$stage/etc/systemd/system/edfd-vm-test.service"
systemctl --root="$stage" enable edfd.service edfd-vm-test.service >"$work/enable.log" 2>&1 ||
        host_fail "image" "systemctl --root enable edfd.service failed" "$work/enable.log"
img=$work/root.img
mkfs.ext4 -q -F -L edfd-vm -d "$stage" "$img" 1G >"$work/mkfs.log" 2>&1 ||
        host_fail "image" "mkfs.ext4 -d failed" "$work/mkfs.log"
[ "${EDFD_VM_KEEP:-0}" = 1 ] || rm -rf "$stage"
lap "image" $t

# --- 5. boot ---

t=$SECONDS
log=$guest_build/vm-serial-$kernel_name.log
: >"$log"
cmdline="console=ttyS0 panic=-1 quiet rw systemd.unified_cgroup_hierarchy=1"
cmdline+=" systemd.mask=serial-getty@ttyS0.service systemd.mask=getty@tty1.service"
boot() { # THREADING: multi or single
        : >"$log"
        timeout --kill-after=10 "$vm_timeout" qemu-system-x86_64 \
                -accel "tcg,thread=$1" -cpu max -smp 4 -m 1024 \
                -nodefaults -display none -no-reboot -monitor none -nic none \
                -serial "file:$log" \
                -kernel "$vmlinuz" -initrd "$work/initrd.gz" -append "$cmdline" \
                -drive "file=$img,format=raw,if=virtio,cache=unsafe" \
                >"$work/qemu.log" 2>&1
}
boot multi
qemu_rc=$?
# One boot in four of 6.12 under multi-threaded TCG died in the guest's kernel before the scenario
# began ("Oops: int3" while the kernel patched its own text: TCG's cross-modifying code). That is
# the emulator's, not edfd's: only such a death, before the scenario's first check, boots once more
# with single-threaded TCG, and says so. Anything later is judged as it is.
if ! grep -qE '^(ok|not ok) [0-9]+( |$)' "$log" && grep -qE 'Oops|Kernel panic' "$log"; then
        echo "# the guest's kernel died before the scenario began under multi-threaded TCG:"
        grep -m3 -E 'Oops|Kernel panic|RIP:' "$log" | tr -d '\r' | comment
        echo "# booting once more with single-threaded TCG"
        cp "$log" "$log.first-boot"
        boot single
        qemu_rc=$?
fi
lap "boot, scenario and poweroff" $t

# --- 6. the results ---

tr -d '\r' <"$log" >"$log.tmp" && mv "$log.tmp" "$log"
tap=$(grep -E '^(ok|not ok) [0-9]+( |$)|^#' "$log")
plan=$(grep -oE '^1\.\.[0-9]+$' "$log" | tail -1)
[ -n "$tap" ] && printf '%s\n' "$tap"
ran=$(grep -cE '^(ok|not ok) [0-9]+( |$)' <<<"$tap")
passed=$(grep -cE '^ok [0-9]+( |$)' <<<"$tap")
# A known fault of the guest's kernel is TAP's TODO (scenario.sh's known()): said, not failed.
todo=$(grep -cE '^not ok [0-9]+ .* # TODO ' <<<"$tap")
failed=$((ran - passed - todo))
problem=
if [ "$qemu_rc" -eq 124 ] || [ "$qemu_rc" -eq 137 ]; then
        problem="the guest was still running after ${vm_timeout}s and was killed"
elif [ "$qemu_rc" -ne 0 ]; then
        problem="qemu exited with status $qemu_rc: $(head -3 "$work/qemu.log" | tr '\n' ' ')"
elif [ -z "$plan" ]; then
        problem="the scenario did not finish (no plan line on the serial console)"
elif [ "${plan#1..}" -ne "$ran" ]; then
        problem="the scenario planned ${plan#1..} checks but reported $ran"
fi
total=$ran
if [ -n "$problem" ]; then
        total=$((ran + 1))
        failed=$((failed + 1))
        echo "not ok $total - the guest booted, ran the scenario to its end and powered off # $problem"
fi
echo "1..$total"
lap total $t_start
echo "# $passed passed, $todo known faults of the guest's kernel (TODO), $failed failed"
echo "# times: $(printf '%s, ' "${times[@]}" | sed 's/, $//')"
if [ "$failed" -gt 0 ]; then
        echo "# the end of the serial log ($log):"
        grep -vE '^(ok|not ok) [0-9]+( |$)|^#' "$log" | tail -60 | comment
        journal=$guest_build/vm-journal-$kernel_name
        rm -rf "$journal"
        mkdir -p "$journal"
        if debugfs -R "rdump /var/log/journal $journal" "$img" >/dev/null 2>&1; then
                echo "# the guest's journal: journalctl -D $journal/journal"
        fi
        [ "${EDFD_VM_KEEP:-0}" = 1 ] || rm -f "$img"
        exit 1
fi
[ "${EDFD_VM_KEEP:-0}" = 1 ] || rm -f "$img"
exit 0
