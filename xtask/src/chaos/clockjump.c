/*
 * The clock-jump fault's interposer (`cargo xtask chaos --clock`, `clock.rs`): an LD_PRELOAD
 * object that shifts one process's wall clock by an offset the harness can change while the
 * process runs. Why an interposer: the kernel's time namespaces offset only CLOCK_MONOTONIC
 * and CLOCK_BOOTTIME, and only before the first process enters them; a wall clock that
 * jumps on one node needs CLOCK_REALTIME shifted for that process alone.
 *
 * The offset is a native-endian int64 of nanoseconds at the start of the file named by
 * CHAOS_CLOCK_OFFSET_FILE, mapped shared and read on every call, so a write by the harness
 * (in place, never truncating: a truncated mapping would fault) is seen at once. Without the
 * variable, or if the file cannot be mapped, the clock is not shifted.
 *
 * Wrapped: clock_gettime of the realtime clocks (Rust's SystemTime::now() and a JVM's
 * System.currentTimeMillis() call it through libc, which reaches the vDSO itself),
 * gettimeofday and time. Monotonic clocks are left alone: a real wall-clock jump (an NTP
 * step, an operator's `date -s`) does not move them either.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile const int64_t *offset_ns;
static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_gettimeofday)(struct timeval *, void *);

__attribute__((constructor)) static void chaos_clock_init(void) {
    real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    real_gettimeofday = dlsym(RTLD_NEXT, "gettimeofday");
    const char *path = getenv("CHAOS_CLOCK_OFFSET_FILE");
    if (path == NULL) {
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    void *map = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map != MAP_FAILED) {
        offset_ns = map;
    }
}

static int64_t current_offset(void) {
    return offset_ns == NULL ? 0 : __atomic_load_n(offset_ns, __ATOMIC_RELAXED);
}

static void shift(struct timespec *ts, int64_t by) {
    int64_t ns = (int64_t)ts->tv_nsec + by % 1000000000LL;
    int64_t s = (int64_t)ts->tv_sec + by / 1000000000LL;
    if (ns < 0) {
        ns += 1000000000LL;
        s -= 1;
    } else if (ns >= 1000000000LL) {
        ns -= 1000000000LL;
        s += 1;
    }
    ts->tv_sec = (time_t)s;
    ts->tv_nsec = (long)ns;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    if (real_clock_gettime == NULL) {
        real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    }
    int rc = real_clock_gettime(clock, ts);
    if (rc == 0 &&
        (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE || clock == CLOCK_TAI)) {
        shift(ts, current_offset());
    }
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
    if (real_gettimeofday == NULL) {
        real_gettimeofday = dlsym(RTLD_NEXT, "gettimeofday");
    }
    int rc = real_gettimeofday(tv, tz);
    if (rc == 0) {
        struct timespec ts = {tv->tv_sec, (long)tv->tv_usec * 1000};
        shift(&ts, current_offset());
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out != NULL) {
        *out = ts.tv_sec;
    }
    return ts.tv_sec;
}
