# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# The VM test's guest kernels, sourced by run-vm.sh: which Debian package a kernel name means, its
# download through a private apt configuration, and the modules its initramfs must load. Nothing
# here changes the host's apt configuration: the private one lives in $cache/apt (its own sources
# list, package lists, cache and an empty dpkg status), and reads only the host's mirror names.
#
#   6.1      Debian 12's cloud kernel (bookworm, its updates and security suites)
#   6.12     the cloud kernel of bookworm-backports (linux-image-6.12.*-cloud-amd64)
#   6.12-rt  the PREEMPT_RT kernel of bookworm-backports (linux-image-6.12.*-rt-amd64), Debian's
#            generic configuration: virtio, ext4 and crc32c are modules there, not built in
#
# Uses the caller's $cache and $suite; sets the k* variables described at vm_kernel_spec.

# The mirror the host's apt fetches "SUITE main" from: the first enabled "deb" entry of
# sources.list and sources.list.d/*.list (one-line format) or sources.list.d/*.sources (deb822),
# in apt's own order. Prints nothing when there is none.
host_mirror() { # suite
        local suite=$1 list parts f
        list=$(apt-config shell l Dir::Etc::sourcelist/f 2>/dev/null | sed -n "s/^l='\(.*\)'$/\1/p")
        parts=$(apt-config shell p Dir::Etc::sourceparts/d 2>/dev/null | sed -n "s/^p='\(.*\)'$/\1/p")
        list=${list:-/etc/apt/sources.list} parts=${parts:-/etc/apt/sources.list.d/}
        for f in "$list" "$parts"*.list "$parts"*.sources; do
                [ -f "$f" ] || continue
                case $f in
                *.sources)
                        awk -v suite="$suite" '
                                function flush() {
                                        if (types ~ /(^| )deb( |$)/ && enabled !~ /^no$/ &&
                                            (" " suites " ") ~ (" " suite " ") && (" " comps " ") ~ / main /) {
                                                split(uris, u, " "); print u[1]; exit
                                        }
                                        types = uris = suites = comps = enabled = ""
                                }
                                /^[ \t]*#/ { next }
                                /^[ \t]*$/ { flush(); next }
                                { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
                                  if (key == "types") types = $0; else if (key == "uris") uris = $0
                                  else if (key == "suites") suites = $0; else if (key == "components") comps = $0
                                  else if (key == "enabled") enabled = tolower($0) }
                                END { flush() }' "$f" ;;
                *)
                        awk -v suite="$suite" '
                                $1 == "deb" { i = 2; if ($2 ~ /^\[/) while (i <= NF && $i !~ /\]$/) i++
                                              if ($2 ~ /^\[/) i++
                                              if ($(i + 1) == suite) for (j = i + 2; j <= NF; j++)
                                                      if ($j == "main") { print $i; exit } }' "$f" ;;
                esac
        done | head -n 1
}

# vm_kernel_spec NAME: what the kernel name means. Sets
#   kname     the name (6.1, 6.12, 6.12-rt)
#   kregex    the kernel image packages that are this kernel (extended regex, whole name)
#   kglob     the cache directories of this kernel, any version (kernel-<kver>-<package version>)
#   kmodules  what the initramfs loads to mount the root disk, unless built in (in load order,
#             each after its dependencies: run-vm.sh reads those from the modules themselves)
# Returns 1 for a name it does not know.
vm_kernel_spec() { # name
        kname=$1
        case $1 in
        6.1)
                kregex='linux-image-6\.1\.0-[0-9]+-cloud-amd64'
                kglob='kernel-6.1.0-*-cloud-amd64-*' ;;
        6.12)
                kregex='linux-image-6\.12\.[0-9][^-]*-cloud-amd64'
                kglob='kernel-6.12.*-cloud-amd64-*' ;;
        6.12-rt)
                kregex='linux-image-6\.12\.[0-9][^-]*-rt-amd64'
                kglob='kernel-6.12.*-rt-amd64-*' ;;
        *)
                return 1 ;;
        esac
        kmodules=(virtio_pci virtio_blk ext4)
}

# The private apt configuration, written afresh each run (only the mirrors go into it): the Debian
# suites the host's sources name, and $suite-backports from the mirror of "$suite main". Sets
# apt_opts, the options every apt call here takes. Returns 1 when the host names no mirror for
# "$suite main" (and EDFD_VM_MIRROR is not set): apt_opts is then empty, and kernel_fetch takes
# what the cache holds.
apt_private() { # main mirror
        local main=$1 a=$cache/apt s m keyring=/usr/share/keyrings/debian-archive-keyring.gpg opt
        apt_opts=()
        [ -n "$main" ] || return 1
        mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/sources.list.d" "$a/preferences.d" || return 1
        : >"$a/status"
        : >"$a/preferences"
        opt="arch=$(dpkg --print-architecture)"
        [ -f "$keyring" ] && opt+=" signed-by=$keyring"
        {
                echo "# Written by edfd's tests/vm/kernel.sh for its kernel downloads; the host's apt does not read it."
                echo "deb [$opt] $main $suite main"
                echo "deb [$opt] $main $suite-backports main"
                for s in "$suite-updates" "$suite-security"; do
                        m=$(host_mirror "$s")
                        [ -n "$m" ] && echo "deb [$opt] $m $s main"
                done
        } >"$a/sources.list.new" || return 1
        # Lists fetched for other sources are stale: a changed list is updated at once.
        if ! cmp -s "$a/sources.list.new" "$a/sources.list"; then
                rm -f "$a/lists/"*_Packages* "$a/lists/"*Release* "$a/cache/"*.bin
        fi
        mv "$a/sources.list.new" "$a/sources.list"
        apt_opts=(-o "Dir::Etc::sourcelist=$a/sources.list" -o "Dir::Etc::sourceparts=$a/sources.list.d"
                  -o "Dir::Etc::preferences=$a/preferences" -o "Dir::Etc::preferencesparts=$a/preferences.d"
                  -o "Dir::State=$a" -o "Dir::State::Lists=$a/lists" -o "Dir::State::status=$a/status"
                  -o "Dir::Cache=$a/cache" -o "Dir::Cache::archives=$a/cache/archives"
                  -o "Acquire::Languages=none" -o "APT::Sandbox::User=root")
}

# The package lists, fetched when there are none or they are older than a day (a new kernel
# version then replaces the cached one). Returns 1 when there are none and none can be fetched.
apt_private_update() { # log
        local lists=$cache/apt/lists
        if [ -z "$(find "$lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 -print -quit 2>/dev/null)" ]; then
                apt-get "${apt_opts[@]}" -q update >"$1" 2>&1 || echo "# apt-get update failed: $(tail -1 "$1")"
        fi
        [ -n "$(find "$lists" -maxdepth 1 -name '*_Packages*' -print -quit 2>/dev/null)" ]
}

# The newest kernel image package matching $kregex that the private lists can fetch: "NAME VERSION".
# Nothing without the private configuration (never the host's lists).
kernel_package() {
        local names
        [ ${#apt_opts[@]} -gt 0 ] || return 0
        names=$(apt-cache "${apt_opts[@]}" pkgnames linux-image- 2>/dev/null | grep -E "^${kregex}$" | sort -V)
        [ -n "$names" ] || return 0
        # shellcheck disable=SC2086 # one argument per name
        apt-cache "${apt_opts[@]}" policy $names 2>/dev/null |
                awk '/^[^ ]/ { name = $1; sub(/:$/, "", name) }
                     $1 == "Candidate:" && $2 != "(none)" { print name, $2 }' |
                sort -V | tail -n 1
}

# The kernel in the cache: kdir, kver, vmlinuz and moddir for $kname, fetched when the lists name a
# version not cached yet. Returns 1 with the reason in $why when there is none to be had.
kernel_fetch() {
        local found kpkg kpkgver dl
        found=$(kernel_package)
        if [ -n "$found" ]; then
                kpkg=${found% *} kpkgver=${found#* }
                kver=${kpkg#linux-image-}
                kdir=$cache/kernel-$kver-$kpkgver
        else
                # No lists (offline): the newest of this kernel already cached, if any.
                # shellcheck disable=SC2086 # $kglob is a pattern
                kdir=$(ls -d "$cache"/$kglob 2>/dev/null | sort -V | tail -n 1)
                if [ -z "$kdir" ]; then
                        why="no package matching ${kregex//\\/} in $suite or $suite-backports (private lists in $cache/apt)"
                        return 1
                fi
                kver=$(basename "$(ls -d "$kdir"/lib/modules/* "$kdir"/usr/lib/modules/* 2>/dev/null | head -n 1)")
        fi
        if [ ! -d "$kdir" ]; then
                dl=$(mktemp -d "$cache/download.XXXXXX") || { why="cannot make a directory in $cache"; return 1; }
                if ! (cd "$dl" && apt-get "${apt_opts[@]}" download "$kpkg=$kpkgver" >"$dl/log" 2>&1); then
                        why="cannot download $kpkg $kpkgver with apt-get download: $(tail -n 1 "$dl/log")"
                        rm -rf "$dl"
                        return 1
                fi
                if ! dpkg-deb -x "$dl"/"$kpkg"_*.deb "$dl/x"; then
                        why="cannot unpack $kpkg $kpkgver"
                        rm -rf "$dl"
                        return 1
                fi
                # shellcheck disable=SC2086 # $kglob is a pattern: the older versions of this kernel
                rm -rf "$cache"/$kglob
                mv "$dl/x" "$kdir" && rm -rf "$dl"
        fi
        vmlinuz=$kdir/boot/vmlinuz-$kver
        moddir=$kdir/lib/modules/$kver
        [ -d "$moddir" ] || moddir=$kdir/usr/lib/modules/$kver
        if [ ! -f "$vmlinuz" ] || [ ! -d "$moddir/kernel" ]; then
                why="no vmlinuz or modules in $kdir"
                return 1
        fi
}

# --- the initramfs's modules ---
# The package ships no modules.dep (its postinst runs depmod, and the host need not have kmod), so
# each module's dependencies come from its .modinfo section: depends= first, then the modules its
# softdep= "pre:" names (ext4 needs crc32c before it can mount a file system with checksums, and
# the kernel cannot load it later: the initramfs has no modprobe). Compressed modules (.ko.xz,
# .ko.zst, .ko.gz) are unpacked into $mod_work, which the caller makes.

# Whether NAME, a module or an alias, is built into the kernel (modules.builtin lists the paths of
# built-in modules, modules.builtin.modinfo their aliases).
module_builtin() { # name
        local n=${1//-/_}
        { [ -f "$moddir/modules.builtin" ] &&
                sed 's#.*/##; s#\.ko$##; s#-#_#g' "$moddir/modules.builtin" | grep -qx "$n"; } ||
        { [ -f "$moddir/modules.builtin.modinfo" ] &&
                tr '\0' '\n' <"$moddir/modules.builtin.modinfo" | grep -qx "[^.]*\.alias=$1"; }
}

# The module file of NAME (or of a name differing in - and _), any compression.
module_path() { # name
        local a=${1//-/_} b=${1//_/-}
        find "$moddir/kernel" \( -name "$a.ko" -o -name "$a.ko.*" -o -name "$b.ko" -o -name "$b.ko.*" \) -print -quit
}

# NAME's module, uncompressed, in $mod_work: prints its path.
module_unpacked() { # name
        local f out
        f=$(module_path "$1")
        [ -n "$f" ] || return 1
        out=$mod_work/$(basename "${f%.ko*}").ko
        [ -f "$out" ] && { echo "$out"; return 0; }
        case $f in
        *.ko) cp "$f" "$out" ;;
        *.ko.xz) xz -dc "$f" >"$out" ;;
        *.ko.zst) zstd -dcq "$f" >"$out" ;;
        *.ko.gz) gzip -dc "$f" >"$out" ;;
        *) return 1 ;;
        esac || return 1
        echo "$out"
}

# A softdep's name is a module or an alias (crc32c: crc32c_generic, crc32c-intel): the module
# NAME_generic, else the first module of crypto/ whose .modinfo names NAME as an alias.
module_for_alias() { # name
        local f
        if [ -n "$(module_path "$1")" ]; then echo "$1"; return 0; fi
        if [ -n "$(module_path "${1}_generic")" ]; then echo "${1}_generic"; return 0; fi
        for f in "$moddir"/kernel/crypto/*.ko*; do
                f=$(module_unpacked "$(basename "${f%.ko*}")") || continue
                if modinfo_of "$f" | grep -qx "alias=$1"; then
                        basename "${f%.ko}"
                        return 0
                fi
        done
        return 1
}

modinfo_of() { # file
        objcopy -O binary --only-section=.modinfo "$1" "$mod_work/modinfo" 2>/dev/null && tr '\0' '\n' <"$mod_work/modinfo"
}

# add_module NAME: NAME's dependencies, then NAME, appended to mod_order (uncompressed paths);
# built-in ones are skipped. Uses the caller's associative array mod_seen. Returns 1 with the reason
# in $why when a module or a hard dependency is missing.
add_module() { # name [soft]
        local name=${1//-/_} file dep info alias
        [ -n "${mod_seen[$name]:-}" ] && return 0
        mod_seen[$name]=1
        module_builtin "$name" && return 0
        if ! file=$(module_unpacked "$name"); then
                [ "${2:-}" = soft ] && return 0
                why="module $name is neither built in nor in $moddir"
                return 1
        fi
        info=$(modinfo_of "$file")
        for dep in $(sed -n 's/^depends=//p' <<<"$info" | head -n 1 | tr ',' ' '); do
                add_module "$dep" || return 1
        done
        for dep in $(sed -n 's/^softdep=//p' <<<"$info" | sed -n 's/^pre: *\(.*\)$/\1/p' | sed 's/ post:.*//'); do
                module_builtin "$dep" && continue
                alias=$(module_for_alias "$dep") || continue
                add_module "$alias" soft || return 1
        done
        mod_order+=("$file")
}
