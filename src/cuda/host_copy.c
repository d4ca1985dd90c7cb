/* A large host memcpy shared by a few OpenMP threads (host_copy.h). */
#include "cuda/host_copy.h"

#include <omp.h>
#include <string.h>

/* One thread moves about 10 GB/s: the first piece of 10000 Fashion-MNIST images (1280, 1 MB) would take ~100 us,
 * four times its transfer, and its upload is the one that shows (gpu_plan.h). A few threads share the
 * memory bandwidth; more than 4 gain little. OpenMP's threads persist between calls, so a call costs no thread start
 * (the run's Total Time includes it). */
#define COPY_THREADS 4
#define COPY_MIN ((size_t)1 << 17) /* bytes a thread is worth waking for */

void nc_host_copy(void *dst, const void *src, size_t n) {
    size_t parts = n / COPY_MIN;
    const size_t most = (size_t)omp_get_max_threads() < COPY_THREADS ? (size_t)omp_get_max_threads() : COPY_THREADS;
    if (parts > most) parts = most;
    if (parts <= 1) {
        memcpy(dst, src, n);
        return;
    }
    const size_t each = (n + parts - 1) / parts;
#pragma omp parallel for num_threads((int)parts) schedule(static, 1)
    for (long i = 0; i < (long)parts; i++) {
        const size_t o = (size_t)i * each < n ? (size_t)i * each : n;
        memcpy((char *)dst + o, (const char *)src + o, n - o < each ? n - o : each);
    }
}
