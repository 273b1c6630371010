/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The VM's initramfs init, linked statically: load the virtio modules that Debian's cloud kernel
 * needs to see the root disk, mount it and hand over to systemd. The modules are the .ko files in
 * /modules, loaded in the order of their names (run-vm.sh numbers them in dependency order).
 * Anything that fails is printed to the console and the kernel is left to panic (panic=-1
 * reboots, and qemu's -no-reboot turns that into an exit). */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROOT_DEVICE "/dev/vda"

static void die(const char *what) {
        fprintf(stderr, "vm-init: %s: %s\n", what, strerror(errno));
        exit(1);
}

static int by_name(const struct dirent **a, const struct dirent **b) {
        return strcmp((*a)->d_name, (*b)->d_name);
}

static void load_modules(void) {
        struct dirent **list;
        int n = scandir("/modules", &list, NULL, by_name);

        if (n < 0)
                die("/modules");
        for (int i = 0; i < n; i++) {
                char path[512];
                int fd;

                if (!strstr(list[i]->d_name, ".ko"))
                        continue;
                snprintf(path, sizeof path, "/modules/%s", list[i]->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        die(path);
                if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
                        die(path);
                close(fd);
        }
}

int main(void) {
        struct timespec pause = { 0, 10 * 1000 * 1000 };
        int fd, tries;

        if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755") < 0)
                die("mount /dev");
        fd = open("/dev/console", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
                dup2(fd, 0);
                dup2(fd, 1);
                dup2(fd, 2);
        }
        load_modules();

        /* virtio_blk probes asynchronously: wait up to 30 s (guest time) for the disk. */
        for (tries = 0; access(ROOT_DEVICE, F_OK) < 0; tries++) {
                if (tries >= 3000)
                        die(ROOT_DEVICE);
                nanosleep(&pause, NULL);
        }
        if (mkdir("/root", 0755) < 0 && errno != EEXIST)
                die("mkdir /root");
        if (mount(ROOT_DEVICE, "/root", "ext4", 0, NULL) < 0)
                die("mount " ROOT_DEVICE);
        if (mount("/dev", "/root/dev", NULL, MS_MOVE, NULL) < 0)
                die("move /dev");

        /* switch_root: the initramfs stays in memory (a few hundred KiB), which does not matter. */
        if (chdir("/root") < 0)
                die("chdir /root");
        if (mount(".", "/", NULL, MS_MOVE, NULL) < 0)
                die("move the root");
        if (chroot(".") < 0 || chdir("/") < 0)
                die("chroot");
        execl("/sbin/init", "/sbin/init", (char *) NULL);
        die("exec /sbin/init");
}
