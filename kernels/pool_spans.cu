// Sums of row ranges, for late pooling: x is [rows, dim] (f32, f16 or bf16), range r is rows
// starts[r] .. ends[r]; out[r] = the sum of those rows in f32, in row order, L2-normalised
// when unit != 0 (norm clamped at 1e-12; an empty range gives a zero row). The late pass calls
// it twice: on a batch's token states with one range per (window, span) run of tokens, then on
// those partial sums, put in document order, with one range per span. Token states never leave
// the device; only span sums (or unit vectors) do. One block per range; threads stride over
// the hidden dimension, so each row is read once, coalesced. The CPU reference is
// seamcut::kernels::pool_spans_reference.
//
// No CUDA headers: half and bfloat16 are read as raw 16-bit words and widened by hand, so NVRTC
// needs nothing but this file.

typedef unsigned short u16;

struct LoadF32 {
    typedef float T;
    __device__ __forceinline__ static float load(const float* p) { return *p; }
};

struct LoadF16 {
    typedef u16 T;
    __device__ __forceinline__ static float load(const u16* p) {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(*p));
        return f;
    }
};

struct LoadBf16 {
    typedef u16 T;
    __device__ __forceinline__ static float load(const u16* p) {
        return __uint_as_float(((unsigned int)*p) << 16);
    }
};

// Sum of `v` over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float partial[32];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? partial[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0) partial[0] = v;
    }
    __syncthreads();
    return partial[0];
}

template <class L>
__device__ void pool_spans(const typename L::T* x, const unsigned int* starts, const unsigned int* ends,
                           float* out, int dim, int unit) {
    const unsigned int s = starts[blockIdx.x], e = ends[blockIdx.x];
    float* o = out + (size_t)blockIdx.x * dim;
    float sq = 0.0f;
    for (int h = threadIdx.x; h < dim; h += blockDim.x) {
        float acc = 0.0f;
        for (unsigned int t = s; t < e; ++t) acc += L::load(x + (size_t)t * dim + h);
        o[h] = acc;
        sq += acc * acc;
    }
    // `unit` is the same for every thread of the block, so all of them reach block_sum's barrier.
    if (unit) {
        const float scale = 1.0f / fmaxf(sqrtf(block_sum(sq)), 1e-12f);
        for (int h = threadIdx.x; h < dim; h += blockDim.x) o[h] *= scale;
    }
}

extern "C" __global__ void pool_spans_f32(const float* x, const unsigned int* starts, const unsigned int* ends,
                                          float* out, int dim, int unit) {
    pool_spans<LoadF32>(x, starts, ends, out, dim, unit);
}

extern "C" __global__ void pool_spans_f16(const u16* x, const unsigned int* starts, const unsigned int* ends,
                                          float* out, int dim, int unit) {
    pool_spans<LoadF16>(x, starts, ends, out, dim, unit);
}

extern "C" __global__ void pool_spans_bf16(const u16* x, const unsigned int* starts, const unsigned int* ends,
                                           float* out, int dim, int unit) {
    pool_spans<LoadBf16>(x, starts, ends, out, dim, unit);
}
