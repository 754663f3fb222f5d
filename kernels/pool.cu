// Pooling and L2 normalisation over a flat token batch, fused: the encoder's last hidden states
// for many sequences laid end to end ([tokens, dim], f32, f16 or bf16), sequence s being rows
// cu_seqlens[s] .. cu_seqlens[s+1]; out[s] = normalise(mean of its rows), or of its first row
// (CLS pooling), in f32. One block per sequence; threads stride over the hidden dimension, so
// each token row is read once, coalesced. The CPU reference is seamcut::kernels::pool_reference.
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
__device__ void pool_l2(const typename L::T* hidden, const unsigned int* cu_seqlens, float* out,
                        int dim, int cls) {
    const unsigned int s = cu_seqlens[blockIdx.x], e = cu_seqlens[blockIdx.x + 1];
    float* o = out + (size_t)blockIdx.x * dim;
    const float inv = e > s ? 1.0f / (float)(e - s) : 0.0f;
    float sq = 0.0f;
    for (int h = threadIdx.x; h < dim; h += blockDim.x) {
        float acc = 0.0f;
        if (cls) {
            if (e > s) acc = L::load(hidden + (size_t)s * dim + h);
        } else {
            for (unsigned int t = s; t < e; ++t) acc += L::load(hidden + (size_t)t * dim + h);
            acc *= inv;
        }
        o[h] = acc;
        sq += acc * acc;
    }
    const float scale = 1.0f / fmaxf(sqrtf(block_sum(sq)), 1e-12f);
    for (int h = threadIdx.x; h < dim; h += blockDim.x) o[h] *= scale;
}

extern "C" __global__ void pool_l2_f32(const float* hidden, const unsigned int* cu_seqlens, float* out,
                                       int dim, int cls) {
    pool_l2<LoadF32>(hidden, cu_seqlens, out, dim, cls);
}

extern "C" __global__ void pool_l2_f16(const u16* hidden, const unsigned int* cu_seqlens, float* out,
                                       int dim, int cls) {
    pool_l2<LoadF16>(hidden, cu_seqlens, out, dim, cls);
}

extern "C" __global__ void pool_l2_bf16(const u16* hidden, const unsigned int* cu_seqlens, float* out,
                                        int dim, int cls) {
    pool_l2<LoadBf16>(hidden, cu_seqlens, out, dim, cls);
}
