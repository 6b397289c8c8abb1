/* How long a thread asleep on a futex takes to run once woken, and on which CPU Linux
 * wakes it (the waker's, or another): the host's part of the time an inference's second
 * thread takes to come back after an idle pause (docs/performance.md, the goals section).
 *
 *     cc -O2 -pthread bench/wake_placement.c -o /tmp/wake_placement
 *     /tmp/wake_placement 0.1 30      # pause in seconds, wake-ups
 *
 * The main thread sleeps for the pause, wakes the other thread (asleep on a futex all the
 * while) and spins until that one runs, as an inference's calling thread would; it prints
 * the wake-up's latency (median, quartiles, maximum) and in how many wake-ups the woken
 * thread ran on the waker's CPU.  Measured at load 3 on the 2-CPU Zen 5 (µs): after
 * 0.1 ms 22.5 median, on the waker's CPU 0 of 30; 1 ms 3.3, 19 of 30; 10 ms 5.9, 30 of 30;
 * 0.1 s 12.2 (p75 17.7, max 3765), 29 of 30. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic int word;
static _Atomic long woke_at;
static _Atomic int woke_cpu;

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void *sleeper(void *arg) {
    (void)arg;
    int seen = 0;
    for (;;) {
        int w;
        while ((w = atomic_load(&word)) == seen)
            syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
        seen = w;
        woke_cpu = sched_getcpu();
        woke_at = now_ns();
    }
    return NULL;
}

static int by_value(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    double pause_s = argc > 1 ? atof(argv[1]) : 0.1;
    int n = argc > 2 ? atoi(argv[2]) : 30;
    if (n < 1 || n > 10000) n = 30;
    long *latency = calloc(n, sizeof *latency);
    int beside = 0;
    pthread_t thread;
    pthread_create(&thread, NULL, sleeper, NULL);
    for (int i = 0; i < n; i++) {
        struct timespec pause = {(long)pause_s, (long)((pause_s - (long)pause_s) * 1e9)};
        nanosleep(&pause, NULL);
        woke_at = 0;
        long start = now_ns();
        atomic_fetch_add(&word, 1);
        syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        while (!woke_at)
            __builtin_ia32_pause();
        latency[i] = woke_at - start;
        beside += woke_cpu == sched_getcpu();
    }
    qsort(latency, n, sizeof *latency, by_value);
    printf("pause %g s: wake-up latency us median %.1f, p25 %.1f, p75 %.1f, max %.1f; "
           "on the waker's CPU %d of %d\n", pause_s, latency[n / 2] / 1e3, latency[n / 4] / 1e3,
           latency[3 * n / 4] / 1e3, latency[n - 1] / 1e3, beside, n);
    return 0;
}
