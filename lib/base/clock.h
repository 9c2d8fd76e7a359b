/*
 * clock: monotonic seconds, for progress lines, statistics and the
 * benchmarks' timings (never for results).
 */
#ifndef LC_CLOCK_H
#define LC_CLOCK_H

double clock_now(void);

#endif
