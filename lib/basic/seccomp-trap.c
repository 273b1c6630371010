/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/seccomp-trap.h"

#if defined(__x86_64__)
#define TRAP_ARCH AUDIT_ARCH_X86_64
#define TRAP_X32_BIT 0x40000000u /* x32 calls share the architecture: their numbers have this bit */
#elif defined(__aarch64__)
#define TRAP_ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define TRAP_ARCH AUDIT_ARCH_RISCV64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TRAP_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#define TRAP_ARCH AUDIT_ARCH_S390X
#else
#error "seccomp-trap: add this architecture's AUDIT_ARCH_*"
#endif

#define TRAP_MAX 32

int seccomp_trap_install(const int *nrs, size_t n) {
        struct sock_filter f[TRAP_MAX + 8];
        size_t k = 0;
        long fd;

        if (!nrs || n == 0 || n > TRAP_MAX)
                return -EINVAL;
        /* Another architecture's calls (their numbers mean something else) run untouched. */
        f[k++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        f[k++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TRAP_ARCH, 1, 0);
        f[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        f[k++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#ifdef TRAP_X32_BIT
        f[k++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, TRAP_X32_BIT, (uint8_t) n, 0);
#endif
        /* Call i: jump over the n - 1 - i comparisons after it, and the ALLOW, to the trap. */
        for (size_t i = 0; i < n; i++)
                f[k++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) nrs[i], (uint8_t) (n - i), 0);
        f[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        f[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);

        struct sock_fprog prog = { .len = (unsigned short) k, .filter = f };

        /* Unprivileged filters need it; it is also what keeps a setuid program from running with
         * its privilege under a filter its invoker wrote. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (fd < 0)
                return -errno;
        return (int) fd;
}

int seccomp_trap_receive(int listener, SeccompNotice *ret) {
        struct seccomp_notif req;

        memset(&req, 0, sizeof req); /* the kernel refuses a struct that is not zeroed */
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
                return -errno;
        *ret = (SeccompNotice) { .id = req.id, .tid = (pid_t) req.pid, .nr = req.data.nr };
        memcpy(ret->args, req.data.args, sizeof ret->args);
        return 0;
}

int seccomp_trap_valid(int listener, uint64_t id) {
        __u64 cookie = id;

        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &cookie) < 0)
                return -errno;
        return 0;
}

int seccomp_trap_open_memory(int listener, const SeccompNotice *n) {
        char path[64];
        int fd, r;

        snprintf(path, sizeof path, "/proc/%" PRIi32 "/mem", (int32_t) n->tid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ESRCH ? -ENOENT : -errno;
        /* Still in the trap: the id named the thread that trapped when the file was opened. */
        r = seccomp_trap_valid(listener, n->id);
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

int seccomp_trap_read(int listener, const SeccompNotice *n, int mem_fd, uint64_t addr, void *buf, size_t size) {
        ssize_t k;
        int r, err;

        if (addr > (uint64_t) INT64_MAX || size > (uint64_t) INT64_MAX - addr)
                return -EFAULT;
        k = pread(mem_fd, buf, size, (off_t) addr);
        err = errno;
        r = seccomp_trap_valid(listener, n->id);
        if (r < 0)
                return r;
        if (k < 0)
                return err == EIO ? -EFAULT : -err;
        return (size_t) k == size ? 0 : -EFAULT;
}

static int send_response(int listener, const struct seccomp_notif_resp *resp) {
        struct seccomp_notif_resp r = *resp;

        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r) < 0)
                return -errno;
        return 0;
}

int seccomp_trap_answer(int listener, uint64_t id, int err) {
        return send_response(listener, &(struct seccomp_notif_resp) { .id = id, .val = err ? -1 : 0, .error = err ? -err : 0 });
}

int seccomp_trap_continue(int listener, uint64_t id) {
        return send_response(listener, &(struct seccomp_notif_resp) { .id = id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE });
}
