// Measures what a GPU device description (device/descriptions/*.toml) holds, on the GPU it
// runs on: SM count, shared memory and L2 size (from the driver), DRAM bandwidth with a
// float4 copy kernel, L2 bandwidth with the same copy on an L2-sized buffer, f32 FMA
// throughput, and the launch cost of an empty kernel (back to back, and launch + sync).
//
// Run by hand on a machine with CUDA (never by the test suite):
//   nvcc -O3 -arch=sm_90 -o gpu_probe tools/gpu_probe.cu && ./gpu_probe
// Prints one `key = value` line per figure, in the description's units.

#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(x)                                                                        \
  do {                                                                                  \
    cudaError_t e = (x);                                                                \
    if (e != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));  \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

__global__ void copy4(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    out[i] = in[i];
  }
}

// Eight independent FMA chains per thread keep the pipes full; the result is stored so
// that the compiler keeps the work.
__global__ void fma_chains(float* out, int iters) {
  float a[8];
  for (int k = 0; k < 8; ++k) a[k] = threadIdx.x * 1e-3f + k;
  const float b = 0.999f, c = 1e-4f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < 8; ++k) a[k] = fmaf(a[k], b, c);
  }
  float s = 0;
  for (int k = 0; k < 8; ++k) s += a[k];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void empty_kernel() {}

// Seconds per call of `launch` (which enqueues work), averaged over `reps` after a warm-up.
template <typename F>
static float time_s(F launch, int reps) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  launch();
  cudaDeviceSynchronize();
  cudaEventRecord(start);
  for (int r = 0; r < reps; ++r) launch();
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms * 1e-3f / reps;
}

int main() {
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  std::printf("name = \"%s\"\n", p.name);
  std::printf("units = %d\n", p.multiProcessorCount);
  std::printf("l2_bytes = %d\n", p.l2CacheSize);
  std::printf("shared_memory_per_unit = %zu\n", p.sharedMemPerBlockOptin);
  std::printf("shared_memory_per_sm_total = %zu\n", p.sharedMemPerMultiprocessor);
  int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
  std::printf("sm_clock_khz = %d\n", clock_khz);
  std::printf("dram_peak_bytes_per_s = %.4g\n", 2.0 * mem_clock_khz * 1e3 * bus_bits / 8);

  const int threads = 256;
  const int blocks = p.multiProcessorCount * 8;

  // DRAM: 1 GiB in, 1 GiB out; bytes moved = read + written.
  size_t n = (size_t(1) << 30) / sizeof(float4);
  float4 *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, n * sizeof(float4)));
  CHECK(cudaMalloc(&out, n * sizeof(float4)));
  CHECK(cudaMemset(in, 0, n * sizeof(float4)));
  float t = time_s([&] { copy4<<<blocks * 4, threads>>>(in, out, n); }, 20);
  CHECK(cudaGetLastError());
  std::printf("dram_bytes_per_s = %.4g\n", 2.0 * n * sizeof(float4) / t);

  // L2: 8 MiB in and out stay resident in a 50 MB L2.
  size_t m = (size_t(8) << 20) / sizeof(float4);
  t = time_s([&] { copy4<<<blocks, threads>>>(in, out, m); }, 2000);
  std::printf("l2_bytes_per_s = %.4g\n", 2.0 * m * sizeof(float4) / t);
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));

  // f32 FMA: 2 flops each.
  float* sink = nullptr;
  const int iters = 4096;
  const int fblocks = p.multiProcessorCount * 16;
  CHECK(cudaMalloc(&sink, sizeof(float) * fblocks * threads));
  t = time_s([&] { fma_chains<<<fblocks, threads>>>(sink, iters); }, 20);
  CHECK(cudaGetLastError());
  double flops = 2.0 * 8 * iters * double(fblocks) * threads / t;
  std::printf("f32_flops = %.4g\n", flops);
  std::printf("f32_flops_per_unit = %.4g\n", flops / p.multiProcessorCount);
  CHECK(cudaFree(sink));

  // Launch cost: back to back (the stream queues them) and one launch waited for.
  t = time_s([&] { empty_kernel<<<1, 32>>>(); }, 20000);
  std::printf("launch_back_to_back_s = %.4g\n", t);
  t = time_s([&] { empty_kernel<<<1, 32>>>(); cudaDeviceSynchronize(); }, 2000);
  std::printf("launch_and_sync_s = %.4g\n", t);
  return 0;
}
