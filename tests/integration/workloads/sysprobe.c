/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sysprobe.c: the kernel facilities real runtimes lean on (event loops, file watching, timers, signals as
 * fds, anonymous memory files, futexes, shared memory, deep pipelines, /proc/self), one line per facility:
 * "NAME ok" or "NAME FAIL: what failed". Exit status 0 when every facility works. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failed;
static char why[256];

/* Records the first failure of a probe (with errno) and returns -1, so that probes read as `if (...) return
 * fail("...")`. */
static int fail(const char *fmt, ...) {
        int e = errno;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        size_t n = strlen(why);
        snprintf(why + n, sizeof why - n, " (errno %d %s)", e, strerror(e));
        return -1;
}

static void report(const char *name, int (*probe)(void)) {
        why[0] = 0;
        fflush(stdout);
        if (probe() == 0)
                printf("%s ok\n", name);
        else {
                printf("%s FAIL: %s\n", name, why);
                failed++;
        }
        fflush(stdout);
}

static int probe_epoll(void) {
        int p[2], ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event ev = { .events = EPOLLIN }, out[4];
        if (ep < 0)
                return fail("epoll_create1");
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
                return fail("pipe2");
        ev.data.fd = p[0];
        if (epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) < 0)
                return fail("epoll_ctl");
        if (epoll_wait(ep, out, 4, 0) != 0)
                return fail("epoll_wait: ready before any write");
        if (write(p[1], "x", 1) != 1)
                return fail("write");
        int n = epoll_wait(ep, out, 4, 1000);
        if (n != 1 || out[0].data.fd != p[0] || !(out[0].events & EPOLLIN))
                return fail("epoll_wait returned %d", n);
        close(p[0]), close(p[1]), close(ep);
        return 0;
}

static int probe_inotify(void) {
        char dir[] = "/tmp/sysprobe.XXXXXX", path[64], buf[4096] __attribute__((aligned(8)));
        int fd = inotify_init1(IN_CLOEXEC);
        if (fd < 0)
                return fail("inotify_init1");
        if (!mkdtemp(dir))
                return fail("mkdtemp");
        if (inotify_add_watch(fd, dir, IN_CREATE | IN_CLOSE_WRITE) < 0)
                return fail("inotify_add_watch");
        snprintf(path, sizeof path, "%s/f", dir);
        int f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        if (f < 0)
                return fail("open");
        close(f);
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < (ssize_t) sizeof(struct inotify_event))
                return fail("read: %zd", n);
        const struct inotify_event *e = (const void *) buf;
        if (!(e->mask & IN_CREATE) || strcmp(e->name, "f") != 0)
                return fail("first event mask %#x name %s", e->mask, e->len ? e->name : "");
        unlink(path), rmdir(dir), close(fd);
        return 0;
}

static int probe_eventfd(void) {
        uint64_t v = 0;
        int fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
        if (fd < 0)
                return fail("eventfd");
        uint64_t three = 3;
        if (write(fd, &three, 8) != 8)
                return fail("write");
        if (read(fd, &v, 8) != 8 || v != 1)
                return fail("semaphore read gave %llu", (unsigned long long) v);
        close(fd);
        return 0;
}

static int probe_timerfd(void) {
        struct itimerspec its = { .it_value = { .tv_nsec = 20 * 1000 * 1000 },
                                  .it_interval = { .tv_nsec = 10 * 1000 * 1000 } };
        struct timespec t0, t1;
        uint64_t ticks = 0;
        int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        if (fd < 0)
                return fail("timerfd_create");
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (timerfd_settime(fd, 0, &its, NULL) < 0)
                return fail("timerfd_settime");
        if (read(fd, &ticks, 8) != 8 || ticks < 1)
                return fail("read");
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        if (ms < 15)
                return fail("fired after %ld ms, armed for 20", ms);
        close(fd);
        return 0;
}

static int probe_signalfd(void) {
        sigset_t m;
        struct signalfd_siginfo si;
        sigemptyset(&m);
        sigaddset(&m, SIGUSR1);
        if (sigprocmask(SIG_BLOCK, &m, NULL) < 0)
                return fail("sigprocmask");
        int fd = signalfd(-1, &m, SFD_CLOEXEC);
        if (fd < 0)
                return fail("signalfd");
        if (kill(getpid(), SIGUSR1) < 0)
                return fail("kill");
        if (read(fd, &si, sizeof si) != sizeof si || si.ssi_signo != SIGUSR1 ||
            si.ssi_pid != (uint32_t) getpid())
                return fail("read: signo %u pid %u", si.ssi_signo, si.ssi_pid);
        close(fd);
        sigprocmask(SIG_UNBLOCK, &m, NULL);
        return 0;
}

static int probe_memfd(void) {
        int fd = memfd_create("sysprobe", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return fail("memfd_create");
        if (ftruncate(fd, 1 << 20) < 0)
                return fail("ftruncate");
        char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
                return fail("mmap");
        strcpy(p + 4096, "sealed");
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
                return fail("F_ADD_SEALS");
        if (ftruncate(fd, 1) == 0)
                return fail("ftruncate after F_SEAL_SHRINK succeeded");
        char b[7] = {};
        if (pread(fd, b, 6, 4096) != 6 || strcmp(b, "sealed") != 0)
                return fail("pread through the fd");
        munmap(p, 1 << 20), close(fd);
        return 0;
}

static _Atomic uint32_t futex_word;

static void *futex_waker(void *arg) {
        (void) arg;
        struct timespec d = { .tv_nsec = 20 * 1000 * 1000 };
        nanosleep(&d, NULL);
        atomic_store(&futex_word, 1);
        syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        return NULL;
}

/* The futex a thread library is built on: a FUTEX_WAIT woken by another thread's FUTEX_WAKE (and a
 * FUTEX_WAIT with a stale value returning EAGAIN at once). Needs a thread: pthread_create. */
static int probe_futex(void) {
        pthread_t t;
        struct timespec to = { .tv_sec = 5 };
        atomic_store(&futex_word, 0);
        if (syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 7, NULL, NULL, 0) == 0 || errno != EAGAIN)
                return fail("FUTEX_WAIT on a stale value did not return EAGAIN");
        int r = pthread_create(&t, NULL, futex_waker, NULL);
        if (r != 0) {
                errno = r;
                return fail("pthread_create");
        }
        while (atomic_load(&futex_word) == 0)
                if (syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &to, NULL, 0) < 0 &&
                    errno != EAGAIN && errno != EINTR)
                        return fail("FUTEX_WAIT");
        pthread_join(t, NULL);
        return 0;
}

/* Shared memory between processes, both kinds: POSIX (shm_open, a file in /dev/shm), System V (shmget). */
static int probe_shm(void) {
        char name[64];
        snprintf(name, sizeof name, "/sysprobe-%d", getpid());
        int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0)
                return fail("shm_open");
        shm_unlink(name);
        if (ftruncate(fd, 4096) < 0)
                return fail("ftruncate");
        volatile int *posix = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (posix == MAP_FAILED)
                return fail("mmap of the POSIX segment");
        int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
        if (id < 0)
                return fail("shmget");
        volatile int *sysv = shmat(id, NULL, 0);
        shmctl(id, IPC_RMID, NULL);
        if (sysv == (void *) -1)
                return fail("shmat");
        pid_t pid = fork();
        if (pid < 0)
                return fail("fork");
        if (pid == 0) {
                posix[0] = 42, sysv[0] = 43;
                _exit(0);
        }
        int st;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
                return fail("waitpid");
        if (posix[0] != 42 || sysv[0] != 43)
                return fail("the child's writes not seen: posix %d sysv %d", posix[0], sysv[0]);
        shmdt((void *) sysv), munmap((void *) posix, 4096), close(fd);
        return 0;
}

/* A pipeline 32 processes deep, each stage adding one to every number passing through, 4 MiB of them, so
 * that every pipe fills and blocks (a shell pipeline, a build's jobserver, a test runner's workers). */
#define STAGES 32
#define COUNT (1 << 20)
static int probe_pipes(void) {
        int in[2], prev;
        pid_t pids[STAGES];
        if (pipe2(in, O_CLOEXEC) < 0)
                return fail("pipe2");
        prev = in[0];
        for (int s = 0; s < STAGES; s++) {
                int p[2];
                if (pipe2(p, O_CLOEXEC) < 0)
                        return fail("pipe2 at depth %d", s);
                pids[s] = fork();
                if (pids[s] < 0)
                        return fail("fork at depth %d", s);
                if (pids[s] == 0) {
                        uint32_t buf[1024];
                        ssize_t n;
                        close(in[1]), close(p[0]);
                        FILE *r = fdopen(prev, "r"), *w = fdopen(p[1], "w");
                        while ((n = fread(buf, 4, 1024, r)) > 0) {
                                for (ssize_t i = 0; i < n; i++)
                                        buf[i]++;
                                if (fwrite(buf, 4, n, w) != (size_t) n)
                                        _exit(1);
                        }
                        _exit(fclose(w) == 0 ? 0 : 1);
                }
                close(prev), close(p[1]);
                prev = p[0];
        }
        pid_t writer = fork();
        if (writer < 0)
                return fail("fork of the writer");
        if (writer == 0) {
                close(prev);
                FILE *w = fdopen(in[1], "w");
                for (uint32_t i = 0; i < COUNT; i++)
                        fwrite(&i, 4, 1, w);
                _exit(fclose(w) == 0 ? 0 : 1);
        }
        close(in[1]);
        FILE *r = fdopen(prev, "r");
        uint32_t v, expect = STAGES;
        size_t got = 0;
        while (fread(&v, 4, 1, r) == 1) {
                if (v != expect)
                        return fail("value %u at %zu, expected %u", v, got, expect);
                expect++, got++;
        }
        fclose(r);
        int bad = 0, st;
        for (int s = 0; s < STAGES; s++)
                if (waitpid(pids[s], &st, 0) != pids[s] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                        bad++;
        if (waitpid(writer, &st, 0) != writer || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                bad++;
        if (got != COUNT || bad)
                return fail("%zu of %d numbers came through, %d processes failed", got, COUNT, bad);
        return 0;
}

static int read_file(const char *path, char *buf, size_t size) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return fail("open %s", path);
        ssize_t n = read(fd, buf, size - 1);
        close(fd);
        if (n <= 0)
                return fail("read %s", path);
        buf[n] = 0;
        return 0;
}

/* What runtimes read about themselves: their executable (Node, Go, the JVM find their files through it),
 * memory maps (Go and sanitizers), limits and status (thread pools size themselves), fds, cgroup. */
static int probe_proc_self(void) {
        static char buf[1 << 16];
        char link[4096];
        ssize_t n = readlink("/proc/self/exe", link, sizeof link - 1);
        if (n <= 0)
                return fail("readlink /proc/self/exe");
        link[n] = 0;
        if (!strstr(link, "sysprobe"))
                return fail("/proc/self/exe is %s", link);
        if (read_file("/proc/self/maps", buf, sizeof buf) < 0)
                return -1;
        if (!strstr(buf, "[stack]"))
                return fail("/proc/self/maps has no [stack]");
        if (read_file("/proc/self/status", buf, sizeof buf) < 0)
                return -1;
        if (!strstr(buf, "\nThreads:") || !strstr(buf, "\nVmRSS:"))
                return fail("/proc/self/status lacks Threads: or VmRSS:");
        if (read_file("/proc/self/stat", buf, sizeof buf) < 0)
                return -1;
        if (atoi(buf) != getpid())
                return fail("/proc/self/stat names pid %d", atoi(buf));
        if (read_file("/proc/self/limits", buf, sizeof buf) < 0)
                return -1;
        if (!strstr(buf, "Max open files"))
                return fail("/proc/self/limits lacks Max open files");
        static const char *const more[] = { "cmdline", "cgroup", "mountinfo", "environ", NULL };
        for (const char *const *f = more; *f; f++) {
                char path[64];
                snprintf(path, sizeof path, "/proc/self/%s", *f);
                if (read_file(path, buf, sizeof buf) < 0)
                        return -1;
        }
        if (readlink("/proc/self/fd/1", link, sizeof link) < 0)
                return fail("readlink /proc/self/fd/1");
        return 0;
}

int main(void) {
        report("epoll", probe_epoll);
        report("inotify", probe_inotify);
        report("eventfd", probe_eventfd);
        report("timerfd", probe_timerfd);
        report("signalfd", probe_signalfd);
        report("memfd", probe_memfd);
        report("futex", probe_futex);
        report("shm", probe_shm);
        report("proc-self", probe_proc_self);
        /* last: it runs 34 processes at once; a sandbox that cannot take them dies with the rest unsaid */
        report("pipes", probe_pipes);
        return failed ? 1 : 0;
}
