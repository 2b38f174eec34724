// Row reshaping with the arity known at run time only (operators whose speed does not
// matter much, for any arity): one thread per row.

// out[i] = in[i] ++ [base + i] (rows of a and a + 1 words).
extern "C" __global__ void rows_number(const u32* __restrict__ in, u64 n, u32 a, u64 base, u32* __restrict__ out) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const u32* r = in + i * a;
  u32* o = out + i * (a + 1);
  for (u32 k = 0; k < a; k++) o[k] = r[k];
  o[a] = (u32)(base + i);
}

// out[i][p] = in[i][order[p]] (rows of a words).
extern "C" __global__ void rows_permute(const u32* __restrict__ in, u64 n, u32 a, const u32* __restrict__ order,
                                        u32* __restrict__ out) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const u32* r = in + i * a;
  u32* o = out + i * a;
  for (u32 p = 0; p < a; p++) o[p] = r[order[p]];
}
