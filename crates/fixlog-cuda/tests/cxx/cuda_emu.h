// Enough of CUDA to RUN the generated kernels on the host (after
// values_shim.h): every thread of a block is an OS thread, __syncthreads is a
// barrier of the block, warp shuffles and ballots exchange through a per-warp
// array between two barriers of the warp (the kernels only call them with
// the whole warp converged), atomics are the compiler's, shared memory is
// static storage (blocks run one after the other). Slow, but it executes the
// templates' real control flow: scans, reservations, cursors, staging, hash
// sets. Needs -std=c++20 (<barrier>) and -pthread.
#include <barrier>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __shared__ static
#define __launch_bounds__(...)

struct FxDim3 { u32 x = 0, y = 0, z = 0; };
static thread_local FxDim3 threadIdx, blockIdx;
static thread_local FxDim3 blockDim;
struct uint2 { u32 x, y; };
struct uint4 { u32 x, y, z, w; };
static inline uint2 make_uint2(u32 x, u32 y) { return {x, y}; }
static inline uint4 make_uint4(u32 x, u32 y, u32 z, u32 w) { return {x, y, z, w}; }
static inline int __popc(u32 x) { return __builtin_popcount(x); }

struct FxBlock {
  std::barrier<> all;
  std::vector<std::unique_ptr<std::barrier<>>> warp;
  std::vector<u32> xchg;
  explicit FxBlock(u32 threads) : all((std::ptrdiff_t)threads), xchg(threads) {
    for (u32 w = 0; w < threads / 32; w++) warp.emplace_back(new std::barrier<>(32));
  }
};
static thread_local FxBlock* fx_block = nullptr;

static inline void __syncthreads() { fx_block->all.arrive_and_wait(); }
// Every lane publishes v; returns what lane `src` published.
static inline u32 fx_exchange(u32 v, u32 src) {
  u32 t = threadIdx.x, w = t / 32;
  fx_block->xchg[t] = v;
  fx_block->warp[w]->arrive_and_wait();
  u32 r = fx_block->xchg[w * 32 + (src & 31u)];
  fx_block->warp[w]->arrive_and_wait();
  return r;
}
static inline u32 __shfl_up_sync(u32, u32 v, u32 d) {
  u32 lane = threadIdx.x & 31u;
  return fx_exchange(v, lane >= d ? lane - d : lane);
}
static inline u32 __shfl_sync(u32, u32 v, int src) { return fx_exchange(v, (u32)src); }
static inline u32 __ballot_sync(u32, bool p) {
  u32 t = threadIdx.x, w = t / 32;
  fx_block->xchg[t] = p ? 1u : 0u;
  fx_block->warp[w]->arrive_and_wait();
  u32 r = 0;
  for (u32 l = 0; l < 32; l++) r |= fx_block->xchg[w * 32 + l] << l;
  fx_block->warp[w]->arrive_and_wait();
  return r;
}
static inline u64 atomicAdd(u64* p, u64 v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline u64 atomicExch(u64* p, u64 v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
static inline u32 atomicOr(u32* p, u32 v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
static inline u64 atomicCAS(u64* p, u64 cmp, u64 v) {
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}

// Runs `kernel` on `grid` blocks of `block` threads, block after block.
template <class F>
void fx_launch(u64 grid, u32 block, F kernel) {
  for (u64 b = 0; b < grid; b++) {
    FxBlock blk(block);
    std::vector<std::thread> threads;
    threads.reserve(block);
    for (u32 t = 0; t < block; t++)
      threads.emplace_back([&, t] {
        threadIdx.x = t;
        blockIdx.x = (u32)b;
        blockDim.x = block;
        fx_block = &blk;
        kernel();
      });
    for (auto& t : threads) t.join();
  }
}
