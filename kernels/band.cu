// Banded cosine similarity for many documents in one launch: the unit vectors of every
// document of a batch laid end to end ([rows, dim], f32), first[i] the row where row i's
// document starts (cu_seqlens-style offsets expanded per row). For each row i and k < width:
//   band[i * width + k] = dot(v[i], v[i - 1 - k])   if i - 1 - k >= first[i], else 0,
// accumulated in f32: exactly seamcut's Band layout, so only rows × width floats go back to the
// host. One block per row: the row is staged in shared memory and each warp takes columns
// k = warp, warp + warps, ...; lanes stride over the dimension and reduce by shuffles.
// The CPU reference is seamcut::kernels::band_reference.

extern "C" __global__ void band_f32(const float* v, const unsigned int* first, float* band, int dim,
                                    int width) {
    extern __shared__ float row[];
    const size_t i = blockIdx.x;
    for (int h = threadIdx.x; h < dim; h += blockDim.x) row[h] = v[i * dim + h];
    __syncthreads();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    const long long lo = first[i];
    for (int k = warp; k < width; k += warps) {
        const long long j = (long long)i - 1 - k;
        float acc = 0.0f;
        if (j >= lo) {
            const float* b = v + (size_t)j * dim;
            for (int h = lane; h < dim; h += 32) acc += row[h] * b[h];
            for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        }
        if (lane == 0) band[i * width + k] = acc;
    }
}
