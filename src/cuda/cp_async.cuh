/*
 * The asynchronous copies the kernels share (sm_80 and up): 4, 8 or 16 bytes from global into shared memory, issued
 * and not waited for; the caller commits and waits for its groups (cp.async.commit_group, cp.async.wait_group N).
 * conv_direct.cu, conv_directc.cu and conv_tc.cu copy their next input by them behind their arithmetic, the dense
 * GEMMs (layers.cu's pipelined tiles, dense_tc.cu's) their next slices. CUDA sources only.
 */
#ifndef NC_CP_ASYNC_CUH
#define NC_CP_ASYNC_CUH

/* The first `bytes` (0..4) of src into dst's 4-byte word, zeros after: with 0 nothing is read (src need only be a
 * valid address), which fills padding and reads a batch's last partial word without going past it. */
__device__ __forceinline__ void nc_cp_async4(void *dst, const void *src, int bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(__cvta_generic_to_global(src)), "r"(bytes)
                 : "memory");
}

/* The first `bytes` (0..8) of src into dst's 8 bytes, zeros after; both 8-byte aligned. */
__device__ __forceinline__ void nc_cp_async8(void *dst, const void *src, int bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(__cvta_generic_to_global(src)), "r"(bytes)
                 : "memory");
}

/* The first `bytes` (0..16) of src into dst's 16 bytes, zeros after; both 16-byte aligned. Cached in L2 only (.cg):
 * for data a block reads once. */
__device__ __forceinline__ void nc_cp_async16(void *dst, const void *src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(__cvta_generic_to_global(src)), "r"(bytes)
                 : "memory");
}

#endif
